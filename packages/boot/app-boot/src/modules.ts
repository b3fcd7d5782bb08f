import { existsSync, readdirSync } from 'node:fs'
import { register } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { resolve as resolveEsm } from 'import-meta-resolve'

/**
 * Resolves a row's module name: an absolute path or URL as is, a bare name
 * from the profile folder first, then from the dsh installation.
 */
export function createModuleResolver(profileDir: string, installDir: string): (name: string) => string {
  const anchors = [profileDir, installDir].map((dir) => pathToFileURL(path.join(dir, 'package.json')).href)
  return (name) => {
    if (path.isAbsolute(name)) return pathToFileURL(name).href
    if (/^[a-z][a-z0-9+.-]*:/i.test(name)) return name
    let lastError: unknown
    for (const anchor of anchors) {
      try {
        return resolveEsm(name, anchor)
      } catch (error) {
        lastError = error
      }
    }
    const reason = (lastError as { code?: string })?.code === 'ERR_MODULE_NOT_FOUND' ? 'not found' : String((lastError as Error)?.message)
    throw new Error(`${reason} in ${profileDir} or the dsh installation (${installDir})`)
  }
}

let hookInstalled = false

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
    needed = readdirSync(profilesDir).some((name) => existsSync(path.join(profilesDir, name, 'node_modules')))
  } catch {
    needed = false
  }
  if (!needed) return
  hookInstalled = true
  const hook = new URL(import.meta.url.endsWith('.ts') ? './resolve-hook.ts' : './resolve-hook.js', import.meta.url)
  register(hook, {
    data: {
      installURL: pathToFileURL(path.join(installDir, 'package.json')).href,
      profilesURL: pathToFileURL(profilesDir).href + '/',
    },
  })
}
