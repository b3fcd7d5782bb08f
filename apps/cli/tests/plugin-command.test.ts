// `dsh plugin --profile <name> <pnpm args>` through the built bin: a local
// plugin folder is added to a fresh profile, booted, and removed again.
import { existsSync, realpathSync } from 'node:fs'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { runDsh, tempDir } from '@dsh/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const PLUGIN = 'dsh-test-marker-plugin'
const ROW = 'marker-row'

interface Layout {
  root: string
  /** Lies inside a decoy pnpm workspace, which pnpm must never touch. */
  home: string
  decoy: string
  /** Where `dsh plugin` is run from; the plugin is at `../plugins/marker` from here. */
  project: string
  pluginDir: string
  marker: string
}

let layout: Layout
let dispose: () => Promise<void>

async function readJson(file: string): Promise<Record<string, any>> {
  return JSON.parse(await readFile(file, 'utf8')) as Record<string, any>
}

function profileFile(...segments: string[]): string {
  return path.join(layout.home, 'profiles', 'mine', ...segments)
}

async function writePlugin(dir: string, marker: string): Promise<void> {
  await mkdir(dir, { recursive: true })
  const manifest = {
    name: PLUGIN,
    version: '1.0.0',
    private: true,
    type: 'module',
    exports: './index.js',
    dsh: { bundle: { patch: './cordis.patch.yml' } },
  }
  await writeFile(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  // `greeting` is left out on purpose: the schema's default fills it in.
  const patch = [
    '- insert:',
    `    - id: ${ROW}`,
    `      name: ${PLUGIN}`,
    '      config:',
    `        marker: ${JSON.stringify(marker)}`,
    '',
  ].join('\n')
  await writeFile(path.join(dir, 'cordis.patch.yml'), patch)
  const plugin = `import { writeFileSync } from 'node:fs'
// Not a dependency of this folder: only the launcher's resolve hook can find it.
import { Schema } from '@dsh/cordis'

export const name = ${JSON.stringify(PLUGIN)}
export const inject = ['appExit']
export const Config = Schema.object({
  marker: Schema.string().required(),
  greeting: Schema.string().default('hello from a profile plugin'),
})

export function apply(ctx, config) {
  const checked = Config(config)
  writeFileSync(checked.marker, checked.greeting + '\\n')
  ctx.appExit(0)
}
`
  await writeFile(path.join(dir, 'index.js'), plugin)
}

beforeAll(async () => {
  const temp = await tempDir('dsh-plugin-command-')
  dispose = temp.dispose
  const root = temp.dir
  const decoy = path.join(root, 'decoy')
  layout = {
    root,
    decoy,
    home: path.join(decoy, 'home'),
    project: path.join(root, 'work', 'project'),
    pluginDir: path.join(root, 'work', 'plugins', 'marker'),
    marker: path.join(root, 'marker.txt'),
  }
  await mkdir(layout.home, { recursive: true })
  await mkdir(layout.project, { recursive: true })
  await writeFile(
    path.join(decoy, 'package.json'),
    `${JSON.stringify({ name: 'decoy-workspace', private: true }, null, 2)}\n`,
  )
  await writeFile(path.join(decoy, 'pnpm-workspace.yaml'), "packages:\n  - '*'\n")
  await writePlugin(layout.pluginDir, layout.marker)
})

afterAll(async () => {
  await dispose?.()
})

describe('dsh plugin', () => {
  it('adds a local plugin folder given relative to the invoking directory and lists it as a bundle', async () => {
    const result = await runDsh(['plugin', '--profile', 'mine', 'add', '../plugins/marker'], {
      home: layout.home,
      cwd: layout.project,
      // As if dsh were run from a pnpm script of the decoy workspace.
      env: { NPM_CONFIG_WORKSPACE_DIR: layout.decoy },
    })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain(`dsh: initialized profile mine at ${profileFile()}`)
    expect(result.stderr).toContain(`added bundle ${PLUGIN} to profile mine`)

    const manifest = await readJson(profileFile('package.json'))
    expect(manifest.dsh.profile.bundles).toEqual(['@dsh/bundle-base', PLUGIN])
    expect(Object.keys(manifest.dependencies)).toEqual([PLUGIN])
    // The profile's node_modules entry is the plugin folder the relative path named.
    expect(realpathSync(profileFile('node_modules', PLUGIN))).toBe(realpathSync(layout.pluginDir))
    expect(await readFile(profileFile('pnpm-workspace.yaml'), 'utf8')).toContain('nodeLinker: hoisted')

    // pnpm stayed inside the profile: the workspace above it is untouched.
    expect(await readJson(path.join(layout.decoy, 'package.json'))).toEqual({ name: 'decoy-workspace', private: true })
    expect(existsSync(path.join(layout.decoy, 'node_modules'))).toBe(false)
    expect(existsSync(path.join(layout.decoy, 'pnpm-lock.yaml'))).toBe(false)
    expect(existsSync(path.join(layout.project, 'node_modules'))).toBe(false)
  })

  it('shows the plugin row in the composed tree', async () => {
    const result = await runDsh(['mine', '--dump-config'], { home: layout.home })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toContain(`id: ${ROW}`)
    expect(result.stdout).toContain(`# == ${PLUGIN}`)
  })

  it('boots the profile: the plugin imports @dsh/cordis, writes its marker and exits 0', async () => {
    expect(existsSync(layout.marker)).toBe(false)
    const result = await runDsh(['mine'], { home: layout.home })
    expect(result.code, result.stderr).toBe(0)
    expect(await readFile(layout.marker, 'utf8')).toBe('hello from a profile plugin\n')
  })

  it('removes the plugin: the bundle leaves the list and the row leaves the tree', async () => {
    const result = await runDsh(['plugin', '--profile', 'mine', 'remove', PLUGIN], {
      home: layout.home,
      cwd: layout.project,
    })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain(`removed bundle ${PLUGIN} from profile mine`)
    expect(result.stderr).not.toContain('initialized profile')

    const manifest = await readJson(profileFile('package.json'))
    expect(manifest.dsh.profile.bundles).toEqual(['@dsh/bundle-base'])
    expect(manifest.dependencies?.[PLUGIN]).toBeUndefined()
    expect(existsSync(profileFile('node_modules', PLUGIN))).toBe(false)

    const dump = await runDsh(['mine', '--dump-config'], { home: layout.home })
    expect(dump.code, dump.stderr).toBe(0)
    expect(dump.stdout).toContain('# == @dsh/bundle-base')
    expect(dump.stdout).not.toContain(ROW)
    expect(dump.stdout).not.toContain(PLUGIN)
  })

  it('refuses to run without pnpm arguments', async () => {
    const before = await readFile(profileFile('package.json'), 'utf8')
    const result = await runDsh(['plugin', '--profile', 'mine'], { home: layout.home })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('plugin needs pnpm arguments to forward (e.g. add <package>)')
    expect(await readFile(profileFile('package.json'), 'utf8')).toBe(before)
  })

  it('exits 127 when pnpm is not on PATH', async () => {
    // A PATH that still finds node but not pnpm.
    let binDir = path.dirname(process.execPath)
    const hasPnpm = (dir: string) => ['pnpm', 'pnpm.cmd', 'pnpm.exe'].some((file) => existsSync(path.join(dir, file)))
    if (hasPnpm(binDir)) {
      binDir = path.join(layout.root, 'node-only-bin')
      await mkdir(binDir, { recursive: true })
      await symlink(process.execPath, path.join(binDir, path.basename(process.execPath)))
    }
    expect(hasPnpm(binDir)).toBe(false)

    const before = await readFile(profileFile('package.json'), 'utf8')
    const result = await runDsh(['plugin', '--profile', 'mine', 'add', '../plugins/marker'], {
      home: layout.home,
      cwd: layout.project,
      env: { PATH: binDir },
    })
    expect(result.code, result.stderr).toBe(127)
    expect(result.stderr).toContain('pnpm not found on PATH')
    expect(result.stderr).not.toContain('pnpm failed')
    expect(await readFile(profileFile('package.json'), 'utf8')).toBe(before)
  })
})
