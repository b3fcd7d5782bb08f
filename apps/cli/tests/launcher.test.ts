import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { runDsh, startDsh, tempDir } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }

let home: string
let cleanup: () => Promise<void>

beforeEach(async () => {
  const tmp = await tempDir()
  home = tmp.dir
  cleanup = tmp.dispose
})
afterEach(() => cleanup())

const dsh = (args: string[], env?: Record<string, string>) => runDsh(args, { home, env })

async function customProfile(name: string, bundles: string[], patch: string): Promise<string> {
  const dir = path.join(home, 'profiles', name)
  await mkdir(dir, { recursive: true })
  await writeFile(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: `p-${name}`, private: true, dsh: { profile: { bundles } } }),
  )
  await writeFile(path.join(dir, 'cordis.patch.yml'), patch)
  return dir
}

describe('launcher basics', () => {
  it('prints its version and help', async () => {
    expect(await dsh(['-V'])).toMatchObject({ code: 0, stdout: `${manifest.version}\n`, stderr: '' })
    const help = await dsh(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: dsh [--profile] <name> [options] [app-args...]')
  })

  it('creates a template profile on first use and dumps its tree', async () => {
    const result = await dsh(['--profile', 'headless', '--dump-config'])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('- id: headless-startup')
    const dir = path.join(home, 'profiles', 'headless')
    expect(readdirSync(dir).sort()).toEqual(['cordis.patch.yml', 'package.json', 'pnpm-workspace.yaml'])
    expect(JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).dsh.profile.bundles).toEqual([
      '@dsh/bundle-base',
      '@dsh/bundle-headless',
    ])
  })

  it('passes app arguments to the app: headless help and usage errors', async () => {
    const help = await dsh(['headless', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: dsh --profile headless')
    const noTask = await dsh(['--profile', 'headless', '   '])
    expect(noTask.code).toBe(1)
    expect(noTask.stderr).toContain('a task is required')
    const badPort = await dsh(['web', '--port', 'eighty', '--no-open'])
    expect(badPort.code).toBe(1)
    expect(badPort.stderr).toContain('--port must be a number')
    const sdkExtra = await dsh(['sdk', 'surprise'])
    expect(sdkExtra.code).toBe(1)
    expect(sdkExtra.stderr).toContain('too many arguments')
  })
})

describe('--dump-config', () => {
  it('shows rows from all four layers, each run commented with its layers', async () => {
    const profileDir = path.join(home, 'profiles', 'headless')
    expect((await dsh(['headless', '--dump-config'])).code).toBe(0)
    const journal = path.join(fixtures, 'journal.mjs')
    await writeFile(
      path.join(profileDir, 'cordis.patch.yml'),
      `- insert:\n    - { id: mine, name: ${journal}, config: { file: a, label: profile } }\n`,
    )
    await writeFile(path.join(home, 'cordis.patch.yml'), `- id: mine\n  config: { file: b, label: home }\n`)
    const overlay = path.join(home, 'overlay.yml')
    await writeFile(
      overlay,
      `- id: hmr\n  disabled: false\n- insert:\n    - id: extra\n      name: ./local-plugin.mjs\n      config: { port: !!js ctx.webStartup.port ?? 3080 }\n`,
    )
    const result = await dsh(['headless', '--patch', overlay, '--dump-config'])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    const profilePatch = path.join(profileDir, 'cordis.patch.yml')
    const homePatch = path.join(home, 'cordis.patch.yml')
    const blocks = result.stdout.split(/^(?=# == )/m)
    const block = (label: string) => blocks.filter((b) => b.startsWith(`# == ${label}\n`))
    expect(block(`@dsh/bundle-base, patched by @dsh/bundle-headless, ${overlay}`)).toEqual([
      [
        `# == @dsh/bundle-base, patched by @dsh/bundle-headless, ${overlay}`,
        '- id: hmr',
        '  name: "@dsh/hmr"',
        '  disabled: false',
        '',
      ].join('\n'),
    ])
    expect(block('@dsh/bundle-headless')).toEqual([
      [
        '# == @dsh/bundle-headless',
        '- id: headless-startup',
        '  name: "@dsh/bundle-headless/startup"',
        '- id: headless-runner',
        '  name: "@dsh/bundle-headless/runner"',
        '',
      ].join('\n'),
    ])
    expect(block(`${profilePatch}, patched by ${homePatch}`)).toEqual([
      [
        `# == ${profilePatch}, patched by ${homePatch}`,
        '- id: mine',
        `  name: ${journal}`,
        '  config:',
        '    file: b',
        '    label: home',
        '',
      ].join('\n'),
    ])
    expect(blocks.at(-1)).toBe(
      [
        `# == ${overlay}`,
        '- id: extra',
        `  name: ${path.join(home, 'local-plugin.mjs')}`,
        '  config:',
        '    port: !!js ctx.webStartup.port ?? 3080',
        '',
      ].join('\n'),
    )
    expect(result.stdout).toContain("    root: !!js dshHomePath('sessions')")
  })

  it('--dump-default-config shows the bundles alone, even when a user patch is broken', async () => {
    await dsh(['web', '--dump-config'])
    await writeFile(path.join(home, 'cordis.patch.yml'), '- id: [broken\n')
    expect((await dsh(['web', '--dump-config'])).code).toBe(1)
    const result = await dsh(['web', '--dump-default-config'])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^# == @dsh\/bundle-base\n- id: hmr\n {2}name: "@dsh\/hmr"\n/)
    expect(result.stdout).toMatch(
      /# == @dsh\/bundle-web-app\n- id: web-startup\n {2}name: "@dsh\/bundle-web-app\/startup"\n- id: web-server\n/,
    )
    expect(result.stdout).not.toContain('broken')
  })
})

describe('bad input fails with exit 1, names the culprit and changes nothing', () => {
  it.each([
    [['nope'], /^dsh: profile "nope" does not exist; create it with 'dsh plugin --profile nope add <package>'\n$/],
    [['--profile', 'a/b'], /^dsh: invalid profile name "a\/b"\n$/],
    [['web', '--dump-config', '--dump-default-config'], /mutually exclusive/],
    [['web', '--dump-config', '--port', '1'], /config dumps take no app arguments, got --port 1/],
    [['web', '--patch'], /--patch needs a path/],
    [['web', '--patch', 'missing.yml', '--dump-config'], /failed to read overlay .*missing\.yml: ENOENT/],
    [[], /--profile <name> is required/],
  ])('dsh %j', async (args, message) => {
    const result = await dsh(args)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toMatch(message)
    expect(existsSync(path.join(home, 'profiles', 'nope'))).toBe(false)
  })

  it.each([
    ['malformed YAML', '- id: hmr\n  config: { debounceMs: [1\n', /cordis\.patch\.yml: malformed YAML/],
    [
      'a patch that is not a list',
      'id: hmr\ndisabled: true\n',
      /cordis\.patch\.yml: a patch file must be a top-level YAML list/,
    ],
    ['an empty patch file', '', /must be a top-level YAML list .*write \[\]/],
    [
      'an unknown id',
      '- id: ghost\n  disabled: true\n',
      /cordis\.patch\.yml: entry 1: no row with id "ghost" to patch/,
    ],
  ])('a profile patch with %s', async (_what, text, message) => {
    const dir = await customProfile('mine', ['@dsh/bundle-base'], text)
    for (const args of [['mine'], ['mine', '--dump-config']]) {
      const result = await dsh(args)
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(path.join(dir, 'cordis.patch.yml'))
      expect(result.stderr).toMatch(message)
    }
  })

  it('an unknown id in an overlay names the overlay file', async () => {
    const overlay = path.join(home, 'extra.yml')
    await writeFile(overlay, '- id: nobody\n  config: {}\n')
    const result = await dsh(['web', '--patch', overlay, '--no-open'])
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(`dsh: ${overlay}: entry 1: no row with id "nobody" to patch\n`)
  })

  it('a row whose module cannot be resolved', async () => {
    await customProfile('mine', ['@dsh/bundle-base'], '- insert:\n    - { id: ghost, name: no-such-plugin }\n')
    const result = await dsh(['mine'])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(
      /^dsh: row "ghost": cannot load module "no-such-plugin": not found in .*profiles\/mine or the dsh installation/,
    )
  })

  it('a config that fails its schema names the row and the field, and starts nothing', async () => {
    const log = path.join(home, 'journal.log')
    const journal = path.join(fixtures, 'journal.mjs')
    await customProfile(
      'mine',
      ['@dsh/bundle-base'],
      `- insert:\n    - { id: j, name: ${journal}, config: { file: ${log}, label: j } }\n`,
    )
    const overlay = path.join(home, 'bad.yml')
    await writeFile(overlay, '- id: hmr\n  config: { debounceMs: soon }\n')
    const result = await dsh(['mine', '--patch', overlay])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^dsh: row "hmr": invalid config: debounceMs: .*expected number but got soon/)
    expect(existsSync(log)).toBe(false)
  })

  it('a plugin that throws while starting: a startup report, exit 1, and the rest of the tree stopped', async () => {
    const log = path.join(home, 'journal.log')
    await customProfile(
      'mine',
      ['@dsh/bundle-base'],
      `- insert:\n    - { id: boom, name: ${path.join(fixtures, 'explodes.mjs')} }\n    - { id: j, name: ${path.join(fixtures, 'journal.mjs')}, config: { file: ${log}, label: j } }\n`,
    )
    const result = await dsh(['mine'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('explodes on purpose')
    expect(result.stderr).toContain('row "boom" failed: explodes on purpose')
    const report = /full diagnostics: (\S+)/.exec(result.stderr)?.[1] as string
    expect(readFileSync(report, 'utf8')).toContain('row "boom" failed')
    expect(readFileSync(log, 'utf8')).toBe('start j\nstop j\n')
  })
})

describe('signals', () => {
  it('SIGINT drains the tree and exits 130; SIGTERM exits 0', async () => {
    const log = path.join(home, 'journal.log')
    await customProfile(
      'mine',
      ['@dsh/bundle-base'],
      `- insert:\n    - { id: j, name: ${path.join(fixtures, 'journal.mjs')}, config: { file: ${log}, label: j } }\n`,
    )
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 0],
    ] as const) {
      const running = startDsh(['mine'], { home, env: { DSH_LOG_LEVEL: 'info' } })
      await running.waitFor(/profile mine started/)
      const result = await running.kill(signal)
      expect(result.code).toBe(code)
    }
    expect(readFileSync(log, 'utf8')).toBe('start j\nstop j\nstart j\nstop j\n')
  })
})
