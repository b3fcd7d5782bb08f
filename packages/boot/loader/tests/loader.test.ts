import { fileURLToPath, pathToFileURL } from 'node:url'
import { Context, ScopedRegistry } from '@dsh/cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ConfigError, Loader, parsePatchList, applyPatches, type Row } from '../src/index.ts'
import { gates } from './fixtures/gated.ts'

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
const resolveModule = (name: string) => pathToFileURL(`${fixtures}${name}.ts`).href

function log(): string[] {
  const g = globalThis as { __loaderLog?: string[] }
  return (g.__loaderLog ??= [])
}

function rows(text: string): Row[] {
  return applyPatches([parsePatchList(text, 'test', fixtures)]).rows
}

let root: Context
let loader: Loader

beforeEach(async () => {
  log().length = 0
  gates().clear()
  root = new Context()
  await root.plugin(Loader, { resolveModule })
  loader = root.loader
})

afterEach(async () => {
  await root.fiber.dispose()
})

describe('Loader.apply', () => {
  it('mounts rows, restarts only a changed row, and disposes removed ones', async () => {
    await loader.apply(
      rows(
        '- insert: [{ id: a, name: recorder, config: { label: a } }, { id: b, name: recorder, config: { label: b } }]',
      ),
    )
    expect((await loader.settle()).failed).toEqual([])
    expect(log()).toEqual(['start a=0', 'start b=0'])

    log().length = 0
    await loader.apply(
      rows(
        '- insert: [{ id: a, name: recorder, config: { label: a, value: 5 } }, { id: b, name: recorder, config: { label: b } }]',
      ),
    )
    await loader.settle()
    expect(log()).toEqual(['stop a=0', 'start a=5'])

    log().length = 0
    await loader.apply(rows('- insert: [{ id: b, name: recorder, config: { label: b } }]'))
    expect(log()).toEqual(['stop a=5'])
  })

  it('settles when the last plugin has started, and reports one still starting when the wait runs out', async () => {
    await loader.apply(
      rows('- insert: [{ id: a, name: gated, config: { label: a } }, { id: b, name: gated, config: { label: b } }]'),
    )
    let settled = false
    const health = loader.settle().then((h) => {
      settled = true
      return h
    })
    gates().get('a')?.()
    await new Promise((resolve) => setImmediate(resolve))
    expect(settled).toBe(false)
    gates().get('b')?.()
    expect(await health).toEqual({ failed: [], pending: [] })

    await loader.apply(rows('- insert: [{ id: c, name: gated, config: { label: c } }]'))
    expect(await loader.settle(20)).toEqual({ failed: [], pending: [{ id: 'c', message: 'still starting' }] })
    gates().get('c')?.()
  })

  it('does not call the tree settled while a plugin waiting for a service it just got is starting', async () => {
    await loader.apply(
      rows(
        '- insert: [{ id: a, name: gated-provider, config: { label: a } }, ' +
          '{ id: b, name: gated, inject: [greeting], config: { label: b } }]',
      ),
    )
    let settled = false
    const health = loader.settle().then((h) => {
      settled = true
      return h
    })
    gates().get('a')?.()
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
    expect(settled).toBe(false)
    expect(gates().has('b')).toBe(true)
    gates().get('b')?.()
    expect(await health).toEqual({ failed: [], pending: [] })
  })

  it('flips disabled both ways', async () => {
    await loader.apply(rows('- insert: [{ id: a, name: recorder, config: { label: a } }]'))
    await loader.apply(rows('- insert: [{ id: a, name: recorder, disabled: true, config: { label: a } }]'))
    await loader.apply(rows('- insert: [{ id: a, name: recorder, disabled: false, config: { label: a } }]'))
    await loader.settle()
    expect(log()).toEqual(['start a=0', 'stop a=0', 'start a=0'])
  })

  it('mounts group children under the group and disposes them with it', async () => {
    const tree = `
- insert:
    - id: g
      group: true
      config:
        - { id: c1, name: recorder, config: { label: c1 } }
        - { id: c2, name: recorder, config: { label: c2 } }
`
    await loader.apply(rows(tree))
    await loader.settle()
    expect(log()).toEqual(['start c1=0', 'start c2=0'])
    await loader.apply(rows(`${tree}- id: c2\n  config: { label: c2, value: 1 }\n`))
    await loader.settle()
    expect(log().slice(2)).toEqual(['stop c2=0', 'start c2=1'])
    await loader.apply(rows(`${tree}- id: c2\n  config: { label: c2, value: 1 }\n- id: g\n  disabled: true\n`))
    expect(log().slice(4).sort()).toEqual(['stop c1=0', 'stop c2=1'])
  })

  it('evaluates !!js only once the injected service is live', async () => {
    await loader.apply(
      rows(`
- insert:
    - { id: consumer, name: recorder, inject: [greeting], config: { label: !!js "ctx.greeting.text + '!'" } }
`),
    )
    let health = await loader.settle()
    expect(health.pending).toEqual([{ id: 'consumer', message: 'waiting for service greeting' }])
    expect(log()).toEqual([])
    await loader.apply(
      rows(`
- insert:
    - { id: consumer, name: recorder, inject: [greeting], config: { label: !!js "ctx.greeting.text + '!'" } }
    - { id: provider, name: greeting-provider, config: { text: hi } }
`),
    )
    health = await loader.settle()
    expect(health).toEqual({ failed: [], pending: [] })
    expect(log()).toEqual(['provide hi', 'start hi!=0'])
  })

  it('reports a plugin that throws on start as failed', async () => {
    await loader.apply(
      rows('- insert: [{ id: bad, name: thrower }, { id: ok, name: recorder, config: { label: ok } }]'),
    )
    const health = await loader.settle()
    expect(health.failed).toEqual([{ id: 'bad', message: 'thrower refuses to start' }])
    expect(log()).toEqual(['start ok=0'])
  })
})

describe('Loader.apply is transactional', () => {
  const good =
    '- insert: [{ id: a, name: recorder, config: { label: a } }, { id: b, name: recorder, config: { label: b } }]'

  it.each([
    ['an unresolvable module', '{ id: c, name: no-such-module }', /row "c": cannot load module "no-such-module"/],
    [
      'a module that is not a plugin',
      '{ id: c, name: not-a-plugin }',
      /row "c": module "not-a-plugin" is not a plugin/,
    ],
    [
      'a config that fails its schema',
      '{ id: c, name: recorder, config: { label: c, value: lots } }',
      /row "c": invalid config: value: /,
    ],
    ['a duplicate id', '{ id: a, name: recorder, config: { label: dup } }', /row id "a" appears more than once/],
  ])('changes nothing when a row has %s', async (_what, bad, message) => {
    await loader.apply(rows(good))
    await loader.settle()
    log().length = 0
    const next = rows(`- insert: [{ id: a, name: recorder, config: { label: a, value: 7 } }]`)
    next.push(...(parsePatchList(`- insert: [${bad}]`, 'bad', fixtures).entries[0]?.insert ?? []))
    const attempt = loader.apply(next)
    await expect(attempt).rejects.toThrow(ConfigError)
    await expect(attempt).rejects.toThrow(message)
    await loader.settle()
    expect(log()).toEqual([])
    expect(loader.rows().map((r) => r.id)).toEqual(['a', 'b'])
  })
})

describe('Loader reload queue', () => {
  it('applies concurrent requests one at a time, in call order', async () => {
    const versions = [1, 2, 3].map((v) =>
      rows(`- insert: [{ id: a, name: recorder, config: { label: a, value: ${v} } }]`),
    )
    await Promise.all(versions.map((v) => loader.apply(v)))
    await loader.settle()
    expect(log()).toEqual(['start a=1', 'stop a=1', 'start a=2', 'stop a=2', 'start a=3'])
  })

  it('keeps going after a rejected apply', async () => {
    const bad = loader.apply(rows('- insert: [{ id: x, name: missing-module }]'))
    const good = loader.apply(rows('- insert: [{ id: a, name: recorder, config: { label: a } }]'))
    await expect(bad).rejects.toThrow(/missing-module/)
    await good
    await loader.settle()
    expect(log()).toEqual(['start a=0'])
  })
})

describe('registry contract', () => {
  it('disposing a plugin removes everything it registered', async () => {
    const registry = new ScopedRegistry<string>('widget')
    const fiber = root.plugin({
      name: 'contributor',
      apply(ctx: Context) {
        registry.register(ctx, 'one', 'first')
        registry.register(ctx, 'two', 'second')
      },
    })
    await fiber
    expect(registry.keys()).toEqual(['one', 'two'])
    expect(() => registry.register(root, 'one', 'again')).toThrow('widget "one" is already registered')
    await fiber.dispose()
    expect(registry.size).toBe(0)
  })

  it('a disposer returned by register removes the entry early', async () => {
    const registry = new ScopedRegistry<number>('thing')
    const off = registry.register(root, 'k', 1)
    off()
    expect(registry.has('k')).toBe(false)
  })
})

describe('disabled rows', () => {
  it('are not loaded or checked until switched on', async () => {
    await loader.apply(
      rows(
        '- insert: [{ id: off, name: no-such-module, disabled: true, config: { anything: 1 } }, { id: a, name: recorder, config: { label: a } }]',
      ),
    )
    expect(await loader.settle()).toEqual({ failed: [], pending: [] })
    await expect(
      loader.apply(rows('- insert: [{ id: off, name: no-such-module, config: { anything: 1 } }]')),
    ).rejects.toThrow(/cannot load module "no-such-module"/)
    await loader.apply(
      rows(
        '- insert: [{ id: off, name: recorder, disabled: true, config: { label: off } }, { id: a, name: recorder, config: { label: a } }]',
      ),
    )
    await loader.apply(
      rows(
        '- insert: [{ id: off, name: recorder, config: { label: off } }, { id: a, name: recorder, config: { label: a } }]',
      ),
    )
    await loader.settle()
    expect(log()).toEqual(['start a=0', 'start off=0'])
    expect(loader.rows().map((r) => r.id)).toEqual(['off', 'a'])
  })
})

describe('rows without inject (one fiber each)', () => {
  const picky = (label: string, fail: boolean) =>
    rows(
      `- insert: [{ id: p, name: picky, config: { label: ${label}, fail: ${fail} } }, { id: ok, name: recorder, config: { label: ok } }]`,
    )

  it('evaluate !!js at mount and again when the expression changes', async () => {
    await loader.apply(rows(`- insert: [{ id: a, name: recorder, config: { label: !!js "'x' + (1 + 1)" } }]`))
    await loader.settle()
    await loader.apply(rows(`- insert: [{ id: a, name: recorder, config: { label: !!js "'x' + (1 + 2)" } }]`))
    expect(await loader.settle()).toEqual({ failed: [], pending: [] })
    expect(log()).toEqual(['start x2=0', 'stop x2=0', 'start x3=0'])
  })

  it('restart on update, stop when switched off and start again when switched on', async () => {
    await loader.apply(rows('- insert: [{ id: a, name: recorder, config: { label: a } }]'))
    await loader.apply(rows('- insert: [{ id: a, name: recorder, config: { label: a, value: 2 } }]'))
    expect(loader.fiberOf('a')).toBeDefined()
    await loader.apply(rows('- insert: [{ id: a, name: recorder, disabled: true, config: { label: a, value: 2 } }]'))
    expect(loader.fiberOf('a')).toBeUndefined()
    await loader.apply(rows('- insert: [{ id: a, name: recorder, config: { label: a, value: 2 } }]'))
    expect(await loader.settle()).toEqual({ failed: [], pending: [] })
    expect(log()).toEqual(['start a=0', 'stop a=0', 'start a=2', 'stop a=2', 'start a=2'])
  })

  it('report a plugin that fails after an update, and recover when the config is fixed', async () => {
    await loader.apply(picky('p', false))
    await loader.settle()
    await loader.apply(picky('p', true))
    expect((await loader.settle()).failed).toEqual([{ id: 'p', message: 'picky p refuses this config' }])
    await loader.apply(picky('p', false))
    expect(await loader.settle()).toEqual({ failed: [], pending: [] })
    expect(log()).toEqual(['start p', 'start ok=0', 'stop p', 'start p'])
  })

  it('report a failing !!js at mount without stopping the other rows', async () => {
    await loader.apply(
      rows(
        `- insert: [{ id: bad, name: recorder, config: { label: !!js "nope.label" } }, { id: ok, name: recorder, config: { label: ok } }]`,
      ),
    )
    const health = await loader.settle()
    expect(health.failed).toEqual([
      { id: 'bad', message: expect.stringMatching(/^row "bad": !!js nope\.label failed: nope is not defined/) },
    ])
    expect(log()).toEqual(['start ok=0'])
  })

  it('reject an update whose !!js fails, stopping the old instance', async () => {
    const tree = (label: string) => rows(`- insert: [{ id: a, name: recorder, config: { label: !!js "${label}" } }]`)
    await loader.apply(tree("'one'"))
    await loader.settle()
    await expect(loader.apply(tree('nope.label'))).rejects.toThrow(/row "a": !!js nope\.label failed/)
    expect((await loader.settle()).failed).toEqual([{ id: 'a', message: expect.stringMatching(/nope is not defined/) }])
    await loader.apply(tree("'two'"))
    expect(await loader.settle()).toEqual({ failed: [], pending: [] })
    expect(log()).toEqual(['start one=0', 'stop one=0', 'start two=0'])
  })

  it('name the logs of a plugin without a name after its row', async () => {
    await loader.apply(rows('- insert: [{ id: nameless, name: unnamed }]'))
    await loader.settle()
    expect(log()).toEqual(['logger nameless'])
  })

  it('stop with their group, and start again when it is switched back on', async () => {
    const tree = (disabled: boolean) =>
      rows(
        `- insert: [{ id: g, group: true, disabled: ${disabled}, config: [{ id: c, name: recorder, config: { label: c } }] }]`,
      )
    await loader.apply(tree(false))
    await loader.apply(tree(true))
    await loader.apply(tree(false))
    await loader.settle()
    expect(log()).toEqual(['start c=0', 'stop c=0', 'start c=0'])
    await root.fiber.dispose()
    expect(log()).toEqual(['start c=0', 'stop c=0', 'start c=0', 'stop c=0'])
  })
})
