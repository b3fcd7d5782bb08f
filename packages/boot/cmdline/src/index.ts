import { type Command, CommanderError } from 'commander'
import type { Context } from '@dsh/cordis'

declare module '@dsh/cordis' {
  interface Context {
    /** The app arguments: every launcher argument from the first one the launcher did not recognise. */
    cmdlineArgs: CmdlineArgs
    /** Asks the launcher to dispose the tree and exit with `code`. */
    appExit: AppExit
  }
  interface Events {
    /**
     * @mode parallel, awaited before the tree is disposed: the app is about to
     * exit (appExit or a signal). Stop work and save state here, while every
     * service is still live. Bounded by the launcher's drain limit.
     */
    'app/shutdown'(): Promise<void>
  }
}

export class CmdlineArgs {
  private readonly args: readonly string[]

  constructor(args: readonly string[]) {
    this.args = Object.freeze([...args])
  }

  get(): readonly string[] {
    return this.args
  }
}

export type AppExit = (code: number) => void

export interface ParsedCmdline {
  options: Record<string, unknown>
  args: string[]
}

/**
 * Runs an app's commander program over `ctx.cmdlineArgs`. On success `accept`
 * turns the parsed values into the app's startup value (it may call
 * `program.error()` to reject them) and that value is returned. Help exits 0
 * and a usage error exits 1 through `ctx.appExit`; both return undefined, so
 * the caller provides nothing and dependent rows never start.
 */
export function parseCmdline<T>(
  ctx: Pick<Context, 'cmdlineArgs' | 'appExit'>,
  program: Command,
  accept: (parsed: ParsedCmdline) => T,
): T | undefined {
  let value: T | undefined
  program
    .exitOverride()
    .configureOutput({
      writeOut: (text) => process.stdout.write(text),
      writeErr: (text) => process.stderr.write(text),
    })
    .action(() => {
      value = accept({ options: program.opts(), args: [...program.args] })
    })
  try {
    program.parse([...ctx.cmdlineArgs.get()], { from: 'user' })
    return value
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error
    const done =
      error.code === 'commander.helpDisplayed' || error.code === 'commander.help' || error.code === 'commander.version'
    ctx.appExit(done ? 0 : 1)
    return undefined
  }
}
