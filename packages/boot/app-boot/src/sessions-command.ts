import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { resolve as resolveEsm } from 'import-meta-resolve'
import type { PreloadedModules } from './modules.ts'

export interface SessionsCommandOptions {
  args: readonly string[]
  home: string
  cwd: string
  installDir: string
  preloaded?: PreloadedModules
  writeOut(text: string): void
  writeErr(text: string): void
}

/** The module that implements the command; loaded from the installation, so plain boots never load SQLite. */
const COMMAND_MODULE = '@dsh/session-catalog/command'

/**
 * `dsh sessions ...`: hands the arguments to the session catalog's command,
 * which reads the logs and the catalog under the home without booting a
 * plugin tree. Resolves with its exit code.
 */
export async function runSessionsCommand(options: SessionsCommandOptions): Promise<number> {
  const { args, home, cwd, writeOut, writeErr } = options
  const command = await loadInstalledModule<SessionsModule>(COMMAND_MODULE, 'sessions', options)
  return command ? command.sessionsCommand({ args, home, cwd, writeOut, writeErr }) : 1
}

/**
 * A command's module, from the startup snapshot when it holds it, else
 * resolved from the dsh installation; undefined (and said on stderr) when it
 * cannot be found.
 */
export async function loadInstalledModule<T>(
  specifier: string,
  command: string,
  options: Pick<SessionsCommandOptions, 'installDir' | 'preloaded' | 'writeErr'>,
): Promise<T | undefined> {
  const preloaded = options.preloaded?.get(specifier)
  if (preloaded) return (await preloaded.load()) as T
  let url: string
  try {
    url = resolveEsm(specifier, pathToFileURL(path.join(options.installDir, 'package.json')).href)
  } catch (error) {
    options.writeErr(
      `dsh: ${command}: cannot load ${specifier} from the dsh installation (${options.installDir}): ${(error as Error).message}\n`,
    )
    return undefined
  }
  return (await import(url)) as T
}

type SessionsModule = {
  sessionsCommand(options: Omit<SessionsCommandOptions, 'installDir' | 'preloaded'>): Promise<number>
}
