import { describe, expect, it } from 'vitest'
import { applyPatches, ConfigError, JsExpr, parsePatchList, renderComposed } from '../src/compose.ts'

const layer = (label: string, text: string) => parsePatchList(text, label, '/profiles/p')

describe('parsePatchList', () => {
  it('reads inserts, overrides and !!js expressions', () => {
    const { entries } = layer(
      'base',
      `
- insert:
    - id: web
      name: '@dsh/web'
      inject: [webStartup]
      config: { port: !!js ctx.webStartup.port ?? 3080 }
- id: web
  disabled: true
`,
    )
    expect(entries).toHaveLength(2)
    const port = (entries[0]?.insert?.[0]?.config as { port: JsExpr }).port
    expect(port).toBeInstanceOf(JsExpr)
    expect(port.source).toBe('ctx.webStartup.port ?? 3080')
    expect(entries[1]?.set).toEqual({ disabled: true })
  })

  it('makes relative module names absolute against the patch file folder', () => {
    const { entries } = layer('p', `- insert: [{ id: mine, name: ./plugins/mine.js }]`)
    expect(entries[0]?.insert?.[0]?.name).toBe('/profiles/p/plugins/mine.js')
  })

  it.each([
    ['- id: x\n  config: [unclosed', /p\.yml: malformed YAML/],
    ['', /p\.yml: a patch file must be a top-level YAML list .*got null.*write \[\]/],
    ['# only a comment\n', /must be a top-level YAML list/],
    ['id: x\nconfig: 1\n', /got a mapping/],
    ['- just a string', /p\.yml: entry 1: a patch entry must be a mapping/],
    ['- id: x\n  colour: red', /p\.yml: entry 1 \(id "x"\): unknown key "colour"/],
    ['- config: { a: 1 }', /p\.yml: entry 1: an entry without "insert" needs the "id"/],
    ['- id: x', /entry 1 \(id "x"\): the entry changes nothing/],
    ['- id: x\n  disabled: maybe', /"disabled" must be true, false or a !!js expression/],
    ['- insert: [{ name: a }]', /entry 1, insert 1: a row needs an "id"/],
    ['- insert: [{ id: a }]', /row "a": "name" \(the plugin module\) is required/],
    ['- insert: { id: a }', /"insert" must be a list of rows/],
  ])('rejects %j', (text, message) => {
    expect(() => layer('p.yml', text)).toThrow(ConfigError)
    expect(() => layer('p.yml', text)).toThrow(message)
  })
})

describe('applyPatches', () => {
  const base = layer(
    'bundle-base',
    `
- insert:
    - { id: a, name: mod-a, config: { x: 1, y: 2 } }
    - id: tools
      group: true
      config:
        - { id: t1, name: mod-t1 }
`,
  )

  it('replaces a whole config, never merging', () => {
    const { rows } = applyPatches([base, layer('profile', '- id: a\n  config: { y: 3 }')])
    expect(rows[0]?.config).toEqual({ y: 3 })
  })

  it('inserts into a group and lets later entries target inserted rows', () => {
    const { rows, origins } = applyPatches([
      base,
      layer('app', '- id: tools\n  insert: [{ id: t2, name: mod-t2 }]\n- insert: [{ id: z, name: mod-z }]'),
      layer('home', '- id: t2\n  disabled: true\n- id: z\n  config: { on: true }'),
    ])
    const tools = rows.find((r) => r.id === 'tools')
    expect((tools?.config as { id: string }[]).map((r) => r.id)).toEqual(['t1', 't2'])
    expect((tools?.config as { disabled?: boolean }[])[1]?.disabled).toBe(true)
    expect(rows.at(-1)).toMatchObject({ id: 'z', config: { on: true } })
    expect(origins.get('t2')).toEqual({ from: 'app', patchedBy: ['home'] })
  })

  it('does not touch the layers it applies', () => {
    applyPatches([base, layer('x', '- id: a\n  config: { y: 9 }')])
    expect(base.entries[0]?.insert?.[0]?.config).toEqual({ x: 1, y: 2 })
  })

  it.each([
    ['- id: nope\n  disabled: true', /overlay\.yml: entry 1: no row with id "nope" to patch/],
    ['- id: a\n  name: other\n  disabled: true', /row "a" loads "mod-a", not "other"/],
    ['- insert: [{ id: a, name: again }]', /row id "a" already exists \(inserted by bundle-base\)/],
    ['- id: a\n  insert: [{ id: q, name: q }]', /row "a" is not a group/],
    ['- id: ghost\n  insert: [{ id: q, name: q }]', /no group with id "ghost"/],
  ])('fails on %j naming the layer', (text, message) => {
    expect(() => applyPatches([base, layer('overlay.yml', text)])).toThrow(message)
  })
})

describe('renderComposed', () => {
  it('prints loadable YAML with provenance comments per run of rows', () => {
    const composed = applyPatches([
      layer('@dsh/bundle-base', '- insert: [{ id: a, name: mod-a }, { id: b, name: mod-b }, { id: c, name: mod-c }]'),
      layer('/home/.dsh/cordis.patch.yml', '- id: b\n  config: { port: !!js ctx.web.port ?? 3080 }'),
    ])
    const text = renderComposed(composed)
    expect(text).toBe(
      [
        '# == @dsh/bundle-base',
        '- id: a',
        '  name: mod-a',
        '# == @dsh/bundle-base, patched by /home/.dsh/cordis.patch.yml',
        '- id: b',
        '  name: mod-b',
        '  config:',
        '    port: !!js ctx.web.port ?? 3080',
        '# == @dsh/bundle-base',
        '- id: c',
        '  name: mod-c',
        '',
      ].join('\n'),
    )
    const reparsed = parsePatchList(`- insert:\n${text.replace(/^/gm, '    ')}`, 'dump', '/')
    expect(applyPatches([reparsed]).rows).toEqual(composed.rows)
  })
})
