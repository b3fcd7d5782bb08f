import type { Readable, Writable } from 'node:stream'
import { providerService } from '@dsh/cordis'

declare module '@dsh/cordis' {
  interface Context {
    subprocess: Subprocess
  }
}

/** What to run. `argv` is never interpreted by a shell. */
export interface ProcessSpec {
  argv: string[]
  /** The working directory; must exist. */
  cwd: string
  /** Set on top of the environment the policy builds, as given (not filtered). */
  env?: Record<string, string>
  /** Written to stdin, which is then closed. Without it stdin is /dev/null. */
  stdin?: string
  /**
   * Keep stdin an open pipe, exposed as `handle.stdin`, for programs spoken to
   * while they run (language servers). Ignored when `stdin` is given.
   */
  openStdin?: boolean
  /** Aborting it kills the whole tree; `done` then reports `cancelled`. */
  signal?: AbortSignal
  /** After this many milliseconds the whole tree is killed; `done` then reports `timedOut`. None by default. */
  timeoutMs?: number
}

/** How a process ended. */
export interface ProcessExit {
  /** The leader's exit code; null when a signal ended it. */
  code: number | null
  /** The signal that ended the leader, e.g. `SIGKILL`. */
  signal: string | null
  /** The timeout fired and the tree was killed. */
  timedOut: boolean
  /** The abort signal fired or `kill()` was called, and the tree was killed. */
  cancelled: boolean
  /**
   * The leader exited by itself but other processes of its group still run
   * (background processes it started). They are killed by `kill()` or when
   * the provider is disposed.
   */
  lingering: boolean
}

/** A running process: the leader of its own process group. */
export interface ProcessHandle {
  /** Undefined when the process could not be started (`done` then rejects). */
  readonly pid: number | undefined
  /** The open stdin pipe, only with `openStdin`. */
  readonly stdin?: Writable
  readonly stdout: Readable
  readonly stderr: Readable
  /**
   * Resolves once the leader has exited and its output was drained (bounded
   * by the provider's drain time). When the tree was killed (timeout, abort,
   * `kill()`, disposal) it resolves only once no process of the tree runs.
   * Rejects when the process could not be started.
   */
  readonly done: Promise<ProcessExit>
  /** Kills the whole tree (SIGTERM, SIGKILL after the grace) and resolves when it is gone. */
  kill(): Promise<void>
}

/**
 * `ctx.subprocess`: starts processes in their own process group and stops
 * them as a whole tree. A provider extends this class; disposing it kills and
 * awaits every process it started.
 */
export abstract class Subprocess extends providerService('subprocess') {
  /**
   * Starts `spec.argv`. Throws at once for a malformed spec, a missing
   * working directory, or after disposal; a failure to start the program
   * itself rejects `done`.
   */
  abstract run(spec: ProcessSpec): ProcessHandle

  /**
   * The environment a child process starts with: dsh's own, filtered by the
   * provider's environment policy, with `extra` on top as given. `run` uses
   * it; so must anything that starts programs some other way (terminals, MCP
   * stdio servers, hooks).
   */
  abstract environment(extra?: Readonly<Record<string, string>>): Record<string, string>
}
