import { existsSync, readdirSync, realpathSync } from 'node:fs'
import { createRequire, register } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { resolve as resolveEsm } from 'import-meta-resolve'

/**
 * Resolves a row's module name: an absolute path or URL as is, a bare name
 * from the profile folder first, then from the dsh installation.
 */
export function createModuleResolver(profileDir: string, installDir: string): (name: string) => string {
  // A profile without node_modules cannot provide a bare name, so it is not asked.
  const dirs = existsSync(path.join(profileDir, 'node_modules')) ? [profileDir, installDir] : [installDir]
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
    const reason = (lastError as { code?: string })?.code === 'ERR_MODULE_NOT_FOUND' ? 'not found' : String((lastError as Error)?.message)
    throw new Error(`${reason} in ${profileDir} or the dsh installation (${installDir})`)
  }
}

let hookInstalled = false

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
 * Lets plugins installed in profile folders import the installation's
 * packages (cordis, @dsh/*). Installed only when some profile has its own
 * node_modules, since the hook costs a worker thread.
 */
export function installProfileImportFallback(home: string, installDir: string): void {
  if (hookInstalled) return
  const profilesDir = path.join(home, 'profiles')
  let needed = false
  try {
    needed = readdirSync(profilesDir).some((name) => name !== 'node_modules' && existsSync(path.join(profilesDir, name, 'node_modules')))
  } catch {
    needed = false
  }
  if (!needed) return
  hookInstalled = true
  const hook = new URL(import.meta.url.endsWith('.ts') ? './resolve-hook.ts' : './resolve-hook.js', import.meta.url)
  register(hook, {
    data: {
      installURL: pathToFileURL(path.join(installDir, 'package.json')).href,
      pluginRoots: profilePluginRoots(profilesDir),
    },
  })
}
