import { providerService } from '@dsh/cordis'
import type { SandboxPolicy } from '@dsh/sandbox'
import type { ProcessHandle } from '@dsh/subprocess'

declare module '@dsh/cordis' {
  interface Context {
    shell: Shell
  }
}

/** One command for a fresh, non-interactive shell. */
export interface ShellRunRequest {
  /** Shell source, run as `<shell> -c <command>`. */
  command: string
  /** The working directory; must exist. */
  cwd: string
  /** After this many milliseconds the whole tree is killed. None when absent. */
  timeoutMs?: number
  /** Aborting it kills the whole tree. */
  signal?: AbortSignal
  /** How the command is confined; mode `off` runs it unconfined. */
  policy: SandboxPolicy
  /** Variables on top of the scrubbed environment and the provider's own. */
  env?: Record<string, string>
}

export type ShellErrorCode = 'SANDBOX_REFUSED' | 'BAD_CWD'

/** Why a command was not started. The caller turns it into an error result. */
export class ShellError extends Error {
  override name = 'ShellError'

  constructor(
    readonly code: ShellErrorCode,
    message: string,
  ) {
    super(message)
  }
}

/**
 * `ctx.shell`: runs one command line in a fresh shell, confined by a sandbox
 * policy. A provider extends this class.
 */
export abstract class Shell extends providerService('shell') {
  /**
   * Starts the command. Rejects with a `ShellError` when the working
   * directory is unusable or the sandbox refuses (the command is then never
   * run); otherwise resolves with the running process.
   */
  abstract run(request: ShellRunRequest): Promise<ProcessHandle>
}
