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
  const preloaded = options.preloaded?.get(COMMAND_MODULE)
  let command: SessionsModule
  if (preloaded) {
    command = (await preloaded.load()) as SessionsModule
  } else {
    let url: string
    try {
      url = resolveEsm(COMMAND_MODULE, pathToFileURL(path.join(options.installDir, 'package.json')).href)
    } catch (error) {
      writeErr(
        `dsh: sessions: cannot load ${COMMAND_MODULE} from the dsh installation (${options.installDir}): ${(error as Error).message}\n`,
      )
      return 1
    }
    command = (await import(url)) as SessionsModule
  }
  return command.sessionsCommand({ args, home, cwd, writeOut, writeErr })
}

type SessionsModule = {
  sessionsCommand(options: Omit<SessionsCommandOptions, 'installDir' | 'preloaded'>): Promise<number>
}
