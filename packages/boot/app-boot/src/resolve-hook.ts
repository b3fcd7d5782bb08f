// A module.register() resolve hook: a bare import made by an out-of-tree
// plugin (installed in a profile's node_modules, or linked there from a local
// folder) that its own folder cannot satisfy is resolved again from the dsh
// installation, so every plugin shares the installation's cordis and @dsh
// packages.
interface HookData {
  installURL: string
  /** Folder URLs (ending in '/') holding plugin code: the profiles folder and the real folders of linked packages. */
  pluginRoots: string[]
}

type Resolve = (specifier: string, context: { parentURL?: string }) => Promise<unknown>

let data: HookData | undefined

export function initialize(value: HookData): void {
  data = value
}

function isBare(specifier: string): boolean {
  return !/^(\.|\/|[a-z][a-z0-9+.-]*:)/i.test(specifier)
}

function isPluginModule(url: string | undefined): boolean {
  return url !== undefined && data !== undefined && data.pluginRoots.some((root) => url.startsWith(root))
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
