// A module.register() hook (data: ImportHookData from modules.ts).
// - resolve: a bare import made by an out-of-tree plugin (installed in a
//   profile's node_modules, or linked there from a local folder) that its own
//   folder cannot satisfy is resolved again from the dsh installation, so
//   every plugin shares the installation's cordis and @dsh packages.
// - load: when the launcher runs from the startup snapshot, a file it holds
//   preloaded (an in-box package, cordis, zod) loads as a module re-exporting
//   the launcher's instance instead of a second copy.
import type { ImportHookData } from './modules.ts'

type Resolve = (specifier: string, context: { parentURL?: string }) => Promise<unknown>
type Load = (url: string, context: object) => Promise<unknown>

let data: ImportHookData | undefined

export function initialize(value: ImportHookData): void {
  data = value
}

function isBare(specifier: string): boolean {
  return !/^(\.|\/|[a-z][a-z0-9+.-]*:)/i.test(specifier)
}

function isPluginModule(url: string | undefined): boolean {
  return url !== undefined && data?.pluginRoots.some((root) => url.startsWith(root)) === true
}

export async function resolve(specifier: string, context: { parentURL?: string }, next: Resolve): Promise<unknown> {
  try {
    return await next(specifier, context)
  } catch (error) {
    const notFound = (error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND'
    if (!data || !notFound || !isBare(specifier) || !isPluginModule(context.parentURL)) throw error
    return next(specifier, { ...context, parentURL: data.installURL })
  }
}

/** Source of a module that re-exports the launcher's preloaded namespace of `specifier`. */
export function preloadedSource(specifier: string, exports: readonly string[]): string {
  const lines = [`const m = globalThis[Symbol.for('dsh.preloaded-modules')].get(${JSON.stringify(specifier)});`]
  exports.forEach((name, i) => {
    lines.push(`const e${i} = m[${JSON.stringify(name)}];`, `export { e${i} as ${JSON.stringify(name)} };`)
  })
  return `${lines.join('\n')}\n`
}

export async function load(url: string, context: object, next: Load): Promise<unknown> {
  const preloaded = data?.preloaded[url]
  if (!preloaded) return next(url, context)
  return { format: 'module', shortCircuit: true, source: preloadedSource(preloaded.specifier, preloaded.exports) }
}
