import { type Branded, providerService } from '@dsh/cordis'

declare module '@dsh/cordis' {
  interface Context {
    terminals: Terminals
  }
}

/** The opaque id of one terminal, unique within the running app. */
export type TerminalId = Branded<string, 'TerminalId'>

/** How a terminal's process ended: an exit code, or the signal that killed it. */
export interface TerminalExit {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface CreateTerminalOptions {
  /** The session the terminal belongs to. */
  sessionId: string
  /** Absolute path of the working directory. */
  cwd: string
  /** A command line, run as `<shell> -c <command>`. Without it the terminal runs an interactive shell. */
  command?: string
  cols?: number
  rows?: number
  /** Variables set on top of the scrubbed environment (they are not scrubbed). */
  env?: Record<string, string>
}

/** What `list` and `get` tell about a terminal. */
export interface TerminalInfo {
  id: TerminalId
  sessionId: string
  /** The command line, or the interactive shell's name. */
  command: string
  cwd: string
  /** The process the terminal started; it leads the terminal's process session. */
  pid: number
  cols: number
  rows: number
  /** Epoch milliseconds. */
  startedAt: number
  /** The offset just past the newest plain-text output. */
  offset: number
  /** Set once the process has exited. */
  exited?: TerminalExit
}

export interface ReadOptions {
  /** Offset to read from (a previous read's `offset`); default 0, everything the buffer still holds. */
  since?: number
}

/** Output read from a terminal. */
export interface TerminalOutput {
  text: string
  /** Pass as `since` to read only what comes next. */
  offset: number
  /** Bytes between `since` and the start of `text` that overflowed the buffer before they were read. */
  dropped: number
  exited?: TerminalExit
}

export interface WaitOptions {
  /** Resolve when this matches the plain text written after `since`. Flags `g` and `y` are ignored. */
  pattern?: RegExp
  /** Resolve when no output has arrived for this long (counted from the call, then from each output). */
  idleMs?: number
  /** Resolve (with reason `timeout`) after this long at the latest. */
  timeoutMs: number
  /** Where "new output" starts; default the current offset. */
  since?: number
  /** Aborting rejects the wait with the signal's reason. The terminal is left as it is. */
  signal?: AbortSignal
}

export type WaitReason = 'pattern' | 'idle' | 'exit' | 'timeout'

export interface WaitResult {
  reason: WaitReason
  /** The current offset when the wait ended. */
  offset: number
  /** With reason `pattern`: the matched text. */
  match?: RegExpExecArray
  exited?: TerminalExit
}

export type TerminalErrorCode =
  /** No terminal has this id (never created, killed, or the provider restarted). */
  | 'NOT_FOUND'
  /** The terminal's process has exited: it takes no more input. */
  | 'EXITED'
  /** The session already has as many terminals as allowed. */
  | 'LIMIT'
  /** The process could not be started (bad cwd, bad options). */
  | 'SPAWN_FAILED'
  /** The provider is shutting down. */
  | 'CLOSED'

/** A failed terminal operation; `code` says which kind. */
export class TerminalError extends Error {
  override name = 'TerminalError'

  constructor(
    readonly code: TerminalErrorCode,
    message: string,
  ) {
    super(message)
  }
}

/**
 * `ctx.terminals`: persistent pseudo-terminals that belong to a session. A
 * provider plugin extends this class (`@dsh/terminals` ships a local one on
 * node-pty). Output is kept in a bounded buffer twice: as plain text for the
 * model (escape sequences and control characters removed, offsets counted in
 * bytes of that text) and raw, as the program wrote it, for terminal UIs.
 *
 * The service does not check who calls: a consumer that serves a session
 * (a tool) compares `get(id).sessionId` with its caller's session.
 */
export abstract class Terminals extends providerService('terminals') {
  /**
   * Starts a terminal. Throws `TerminalError` with `LIMIT` when the session
   * has as many terminals as allowed (and none that has exited to make room
   * for), `SPAWN_FAILED` for a missing or relative cwd, `CLOSED` while the
   * provider shuts down.
   */
  abstract create(options: CreateTerminalOptions): Promise<TerminalId>

  /** Sends input as typed (`\r` is Enter, `\x03` is Ctrl+C). Throws `NOT_FOUND`, or `EXITED` once the process has exited. */
  abstract write(id: TerminalId, data: string): void

  /** Plain-text output from `since`. Throws `NOT_FOUND`. */
  abstract read(id: TerminalId, options?: ReadOptions): TerminalOutput

  /** Raw output (escape sequences kept) from `since`; offsets count bytes of the raw stream. Throws `NOT_FOUND`. */
  abstract readRaw(id: TerminalId, options?: ReadOptions): TerminalOutput

  /** Changes the terminal's size. Throws `NOT_FOUND` or `EXITED`. */
  abstract resize(id: TerminalId, cols: number, rows: number): void

  /**
   * Resolves when `pattern` matches the output after `since`, when output
   * has been quiet for `idleMs`, when the process exits, or at `timeoutMs`,
   * whichever comes first. Output already there when the call starts counts.
   * Throws `NOT_FOUND`; rejects with the signal's reason on abort.
   */
  abstract waitFor(id: TerminalId, options: WaitOptions): Promise<WaitResult>

  /**
   * Stops the terminal's whole process tree, waits until it is gone, and
   * forgets the terminal: its id is unknown afterwards. Throws `NOT_FOUND`.
   */
  abstract kill(id: TerminalId): Promise<void>

  /** The session's terminals, running and exited, oldest first. */
  abstract list(sessionId: string): TerminalInfo[]

  /** One terminal, or undefined for an unknown id. */
  abstract get(id: TerminalId): TerminalInfo | undefined

  /** Kills every terminal of the session (for when the session closes). */
  abstract killSession(sessionId: string): Promise<void>
}

/** How an exit reads in messages: `exit code 0`, `killed by SIGTERM`. */
export function describeExit(exit: TerminalExit): string {
  if (exit.signal) return `killed by ${exit.signal}`
  if (exit.code !== null) return `exit code ${exit.code}`
  return 'stopped'
}
