import { existsSync, readdirSync, realpathSync } from 'node:fs'
import { createRequire, register } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { resolve as resolveEsm } from 'import-meta-resolve'

/**
 * Resolves a row's module name: an absolute path or URL as is, a bare name
 * from the profile folder first, then from the dsh installation.
 */
export function createModuleResolver(profileDir: string, installDir: string | undefined): (name: string) => string {
  // A profile without node_modules cannot provide a bare name, so it is not asked.
  const dirs = [
    ...(existsSync(path.join(profileDir, 'node_modules')) ? [profileDir] : []),
    ...(installDir ? [installDir] : []),
  ]
  const anchors = dirs.map((dir) => {
    const file = path.join(dir, 'package.json')
    return { url: pathToFileURL(file).href, require: createRequire(file) }
  })
  return (name) => {
    if (path.isAbsolute(name)) return pathToFileURL(name).href
    if (/^[a-z][a-z0-9+.-]*:/i.test(name)) return name
    let lastError: unknown
    for (const anchor of anchors) {
      // Node's own resolver is much faster. Our packages export one file per
      // path for every condition, so it finds what the ESM algorithm would.
      if (name.startsWith('@dsh/')) {
        try {
          return pathToFileURL(anchor.require.resolve(name)).href
        } catch {
          // try the ESM resolution below
        }
      }
      try {
        return resolveEsm(name, anchor.url)
      } catch (error) {
        lastError = error
      }
    }
    if (anchors.length === 0)
      throw new Error(`not found: ${profileDir} has no node_modules folder to look in (install the plugin there)`)
    const reason =
      (lastError as { code?: string })?.code === 'ERR_MODULE_NOT_FOUND'
        ? 'not found'
        : String((lastError as Error)?.message)
    throw new Error(
      installDir ? `${reason} in ${profileDir} or the dsh installation (${installDir})` : `${reason} in ${profileDir}`,
    )
  }
}

/** Lists `node_modules/<pkg>` and `node_modules/@scope/<pkg>` folders. */
function packageFolders(nodeModules: string): string[] {
  const folders: string[] = []
  let entries: string[]
  try {
    entries = readdirSync(nodeModules)
  } catch {
    return folders
  }
  for (const entry of entries) {
    if (entry.startsWith('.')) continue
    const full = path.join(nodeModules, entry)
    if (!entry.startsWith('@')) {
      folders.push(full)
      continue
    }
    try {
      for (const child of readdirSync(full)) folders.push(path.join(full, child))
    } catch {
      // not a folder: nothing to list
    }
  }
  return folders
}

function realDir(dir: string): string | undefined {
  try {
    return realpathSync(dir)
  } catch {
    return undefined
  }
}

/**
 * The folders whose modules count as out-of-tree plugin code: the profiles
 * folder itself, plus the real location of every package linked into a
 * profile's node_modules (`pnpm add ./dir` links the folder in place, and Node
 * loads it from its real path, outside the profiles folder).
 */
export function profilePluginRoots(profilesDir: string): string[] {
  const roots = new Set<string>([path.resolve(profilesDir)])
  const realProfiles = realDir(profilesDir)
  if (realProfiles) roots.add(realProfiles)
  let profiles: string[] = []
  try {
    profiles = readdirSync(profilesDir)
  } catch {
    profiles = []
  }
  for (const profile of profiles) {
    if (profile === 'node_modules' || profile.startsWith('.')) continue
    for (const folder of packageFolders(path.join(profilesDir, profile, 'node_modules'))) {
      // Copied packages stay inside the profiles folder; only links lead elsewhere.
      const real = realDir(folder)
      const inside = real === undefined ? '' : path.relative(realProfiles ?? profilesDir, real)
      if (real && (inside.startsWith('..') || path.isAbsolute(inside))) roots.add(real)
    }
  }
  return [...roots].map((dir) => pathToFileURL(dir).href.replace(/\/?$/, '/'))
}

/**
 * A module the launcher holds already evaluated (the startup snapshot), by
 * specifier: `file` is where Node would load it from in the installation
 * (absolute), `load` resolves with its namespace.
 */
export interface PreloadedModule {
  file: string
  load(): Promise<Record<string, unknown>>
}

export type PreloadedModules = ReadonlyMap<string, PreloadedModule>

export interface ModuleImporterOptions {
  home: string
  profileDir: string
  installDir: string
  preloaded?: PreloadedModules
}

/**
 * Loads a row's module by name: from the profile folder when it has
 * node_modules and holds the name, else the preloaded in-box module of that
 * name, else Node's import of what `createModuleResolver` finds.
 */
export function createModuleImporter(options: ModuleImporterOptions): (name: string) => Promise<unknown> {
  const resolve = createModuleResolver(options.profileDir, options.installDir)
  const profileHasModules = existsSync(path.join(options.profileDir, 'node_modules'))
  const fromProfile = profileHasModules ? createModuleResolver(options.profileDir, undefined) : undefined
  let hooks: Promise<void> | undefined
  const importForReal = async (url: string) => {
    await (hooks ??= installImportHooks(options))
    return import(url)
  }
  return async (name) => {
    const inBox = options.preloaded?.get(name)
    if (inBox) {
      let url: string | undefined
      try {
        url = fromProfile?.(name)
      } catch {
        url = undefined
      }
      return url === undefined ? inBox.load() : importForReal(url)
    }
    return importForReal(resolve(name))
  }
}

/** Data of the `module.register` hook in resolve-hook.ts. */
export interface ImportHookData {
  /** The installation, where imports that plugin code cannot satisfy are resolved again. */
  installURL: string
  /** Folder URLs (ending in '/') holding out-of-tree plugin code: the profiles folder and the real folders of linked packages. */
  pluginRoots: string[]
  /** Files the launcher holds preloaded, by file URL: importing one yields the launcher's instance. */
  preloaded: Record<string, { specifier: string; exports: string[] }>
}

/**
 * Registers the import hook before the first module is imported for real,
 * when it has work to do: plugins installed in profile folders import the
 * installation's packages through it, and with preloaded modules every real
 * import of an in-box file gets the preloaded instance (one cordis, one zod).
 * Costs a worker thread, so it is skipped when neither applies.
 */
async function installImportHooks(options: ModuleImporterOptions): Promise<void> {
  const profilesDir = path.join(options.home, 'profiles')
  let profileModules = false
  try {
    profileModules = readdirSync(profilesDir).some(
      (name) => name !== 'node_modules' && existsSync(path.join(profilesDir, name, 'node_modules')),
    )
  } catch {
    profileModules = false
  }
  if (!profileModules && !options.preloaded) return
  // From the TypeScript sources (the unit tests) there is nothing to register: Node cannot run a .ts hook.
  if (import.meta.url.endsWith('.ts')) return
  const preloaded: ImportHookData['preloaded'] = {}
  const modules = new Map<string, Record<string, unknown>>()
  for (const [specifier, module] of options.preloaded ?? []) {
    const namespace = await module.load()
    modules.set(specifier, namespace)
    preloaded[pathToFileURL(module.file).href] = { specifier, exports: Object.keys(namespace) }
  }
  ;(globalThis as Record<symbol, unknown>)[PRELOADED_KEY] = modules
  const data: ImportHookData = {
    installURL: pathToFileURL(path.join(options.installDir, 'package.json')).href,
    pluginRoots: profileModules ? profilePluginRoots(profilesDir) : [],
    preloaded,
  }
  register(new URL('./resolve-hook.js', import.meta.url), { data })
}

/** Where the hook's generated modules find the launcher's preloaded namespaces. */
export const PRELOADED_KEY = Symbol.for('dsh.preloaded-modules')
