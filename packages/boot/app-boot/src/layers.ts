import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import {
  applyPatches,
  type Composed,
  ConfigError,
  isPlainObject,
  type Layer,
  parsePatchList,
} from '@dsh/loader/compose'
import { type Profile, TEMPLATES } from './profile.ts'

/** Finds `<name>/package.json` on the node_modules search path above `fromDir`. */
export function findPackageDir(name: string, fromDir: string): string | undefined {
  let dir = path.resolve(fromDir)
  for (;;) {
    const candidate = path.join(dir, 'node_modules', name)
    if (existsSync(path.join(candidate, 'package.json'))) return candidate
    const parent = path.dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

export interface BundleInfo {
  name: string
  dir: string
  patchFiles: string[]
}

/** Reads a package's `dsh.bundle.patch` declaration, or undefined when it declares none. */
export async function readBundleDeclaration(name: string, dir: string): Promise<BundleInfo | undefined> {
  const file = path.join(dir, 'package.json')
  let manifest: unknown
  try {
    manifest = JSON.parse(await readFile(file, 'utf8'))
  } catch (error) {
    throw new ConfigError(`bundle "${name}": cannot read ${file}: ${(error as Error).message}`)
  }
  const dsh = isPlainObject(manifest) ? manifest.dsh : undefined
  const bundle = isPlainObject(dsh) ? dsh.bundle : undefined
  if (!isPlainObject(bundle)) return undefined
  const patch = bundle.patch
  const files = typeof patch === 'string' ? [patch] : patch
  if (!Array.isArray(files) || files.length === 0 || !files.every((f) => typeof f === 'string' && f.length > 0)) {
    throw new ConfigError(`bundle "${name}": "dsh.bundle.patch" in ${file} must be a file name or a list of them`)
  }
  return { name, dir, patchFiles: files.map((f) => path.resolve(dir, f)) }
}

/** Resolves a profile's bundle: from the dsh installation first, then from the profile folder. */
export async function resolveBundle(name: string, profile: Profile, installDir: string): Promise<BundleInfo> {
  const dir = findPackageDir(name, installDir) ?? findPackageDir(name, profile.dir)
  if (!dir) {
    throw new ConfigError(
      `cannot resolve profile bundle "${name}" from the dsh installation or ${profile.dir}; run 'dsh plugin --profile ${profile.name} install' if it is a dependency that is not installed`,
    )
  }
  const info = await readBundleDeclaration(name, dir)
  if (!info)
    throw new ConfigError(`profile bundle "${name}" (${dir}) declares no "dsh.bundle.patch" in its package.json`)
  return info
}

/**
 * Parsed patch files by path, reused while the file holds the same text
 * (composition never changes a layer). The startup snapshot carries the
 * shipped bundles' layers parsed already (`preparseShippedBundles`).
 */
const parsedLayers = new Map<string, { text: string; label: string; layer: Layer }>()

async function readLayer(file: string, label: string, kind: string): Promise<Layer> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new ConfigError(
      `failed to read ${kind} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    )
  }
  const parsed = parsedLayers.get(file)
  if (parsed?.text === text && parsed.label === label) return parsed.layer
  const layer = parsePatchList(text, label, path.dirname(file))
  parsedLayers.set(file, { text, label, layer })
  return layer
}

/** Parses the patch files of the bundles the shipped profile templates list, as the launcher will read them. */
export async function preparseShippedBundles(installDir: string): Promise<void> {
  for (const name of new Set(Object.values(TEMPLATES).flat())) {
    const dir = findPackageDir(name, installDir)
    const bundle = dir ? await readBundleDeclaration(name, dir) : undefined
    for (const file of bundle?.patchFiles ?? []) await readLayer(file, name, `bundle patch of ${name}`)
  }
}

export interface LayerSources {
  bundleLayers: Layer[]
  overlayLayers: Layer[]
  /** User patch files that may change while the tree runs, in layer order. */
  userFiles: string[]
}

/** Reads every layer except the user patch files, which `composeLayers` reads fresh each time. */
export async function readFixedLayers(
  profile: Profile,
  installDir: string,
  overlays: string[],
  cwd: string,
): Promise<LayerSources> {
  const bundleLayers: Layer[] = []
  for (const name of profile.bundles) {
    const bundle = await resolveBundle(name, profile, installDir)
    for (const file of bundle.patchFiles) bundleLayers.push(await readLayer(file, name, `bundle patch of ${name}`))
  }
  const overlayLayers: Layer[] = []
  for (const overlay of overlays) {
    const file = path.resolve(cwd, overlay)
    overlayLayers.push(await readLayer(file, file, 'overlay'))
  }
  return { bundleLayers, overlayLayers, userFiles: [] }
}

/** The profile patch, then the home patch; each is optional. */
export function userPatchFiles(profile: Profile, home: string): string[] {
  return [profile.patchFile, path.join(home, 'cordis.patch.yml')]
}

export async function readUserLayers(files: string[]): Promise<Layer[]> {
  const layers: Layer[] = []
  for (const file of files) {
    if (existsSync(file)) layers.push(await readLayer(file, file, 'patches'))
  }
  return layers
}

export function compose(layers: Layer[]): Composed {
  return applyPatches(layers)
}
