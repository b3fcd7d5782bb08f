import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { ConfigError, isPlainObject } from '@dsh/loader/compose'
import { ensurePrivateDir } from './home.ts'

/** Profiles a user gets without creating them: their bundle lists. */
export const TEMPLATES: Readonly<Record<string, readonly string[]>> = {
  web: ['@dsh/bundle-base', '@dsh/bundle-web-app'],
  headless: ['@dsh/bundle-base', '@dsh/bundle-headless'],
  sdk: ['@dsh/bundle-base', '@dsh/bundle-sdk-app'],
  'sdk-minimal': ['@dsh/bundle-sdk-minimal'],
  acp: ['@dsh/bundle-base', '@dsh/bundle-acp-app'],
  doctor: ['@dsh/bundle-base', '@dsh/bundle-doctor'],
}

/** The bundle a new custom profile starts from. */
export const BASE_BUNDLE = '@dsh/bundle-base'

export interface Profile {
  name: string
  dir: string
  manifestPath: string
  manifest: Record<string, unknown>
  bundles: string[]
  patchFile: string
}

const PATCH_HEADER = `# Your patch layer for this profile, applied after every bundle layer.
# A YAML list of patch entries:
#   - id: <row id>            replace that row's whole config, or flip disabled
#     config: {...}
#   - insert: [ {id, name, config} ]   add rows (with id: <group>, into that group)
# See the composed tree with: dsh --profile <name> --dump-config
`

export function profileDir(home: string, name: string): string {
  return path.join(home, 'profiles', name)
}

/** Writes the files of a new profile; files that exist are left alone. */
export async function initProfile(dir: string, name: string, bundles: readonly string[]): Promise<void> {
  await ensurePrivateDir(dir)
  const files: Record<string, string> = {
    'package.json': `${JSON.stringify({ name: `dsh-profile-${name}`, private: true, type: 'module', dependencies: {}, dsh: { profile: { bundles } } }, null, 2)}\n`,
    'cordis.patch.yml': `${PATCH_HEADER.replace('<name>', name)}[]\n`,
    'pnpm-workspace.yaml': "packages:\n  - '.'\nnodeLinker: hoisted\nautoInstallPeers: false\n",
  }
  for (const [file, text] of Object.entries(files)) {
    const target = path.join(dir, file)
    if (!existsSync(target)) await writeFile(target, text, { mode: 0o600 })
  }
}

/** Opens a profile, creating it first when it is a missing template. */
export async function openProfile(home: string, name: string, options: { create?: boolean } = {}): Promise<Profile> {
  const dir = profileDir(home, name)
  const manifestPath = path.join(dir, 'package.json')
  if (!existsSync(manifestPath)) {
    const template = TEMPLATES[name]
    if (template) await initProfile(dir, name, template)
    else if (options.create) await initProfile(dir, name, [BASE_BUNDLE])
    else
      throw new ConfigError(
        `profile "${name}" does not exist; create it with 'dsh plugin --profile ${name} add <package>'`,
      )
  }
  const manifest = await readManifest(manifestPath)
  return {
    name,
    dir,
    manifestPath,
    manifest,
    bundles: profileBundles(manifest, manifestPath),
    patchFile: path.join(dir, 'cordis.patch.yml'),
  }
}

export async function readManifest(file: string): Promise<Record<string, unknown>> {
  let data: unknown
  try {
    data = JSON.parse(await readFile(file, 'utf8'))
  } catch (error) {
    throw new ConfigError(`profile manifest ${file} is not valid JSON: ${(error as Error).message}`)
  }
  if (!isPlainObject(data)) throw new ConfigError(`profile manifest ${file} must hold a JSON object`)
  return data
}

function profileBundles(manifest: Record<string, unknown>, file: string): string[] {
  const bad = (what: string) => new ConfigError(`profile manifest ${file}: ${what}`)
  const dsh = manifest.dsh
  if (dsh === undefined) return []
  if (!isPlainObject(dsh)) throw bad('"dsh" must be an object')
  if (dsh.profile === undefined) return []
  if (!isPlainObject(dsh.profile)) throw bad('"dsh.profile" must be an object')
  const bundles = dsh.profile.bundles
  if (bundles === undefined) return []
  if (!Array.isArray(bundles) || !bundles.every((b) => typeof b === 'string' && b.length > 0)) {
    throw bad('"dsh.profile.bundles" must be a list of package names')
  }
  return bundles
}

export async function writeManifest(profile: Profile, bundles: string[]): Promise<void> {
  const dsh = isPlainObject(profile.manifest.dsh) ? profile.manifest.dsh : {}
  const section = isPlainObject(dsh.profile) ? dsh.profile : {}
  const next = { ...profile.manifest, dsh: { ...dsh, profile: { ...section, bundles } } }
  await writeFile(profile.manifestPath, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 })
}
