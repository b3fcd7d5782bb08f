import { type Context, Service } from '@dsh/cordis'
import type { SessionEvent, SessionId, SessionMeta } from '@dsh/session'

declare module '@dsh/cordis' {
  interface Context {
    sessionPersistence: SessionPersistence
  }
}

/** Something wrong with one line of a stored log; the line was skipped. */
export interface LogProblem {
  /** 1-based line number in the (decompressed) log; line 1 is the header. */
  line: number
  message: string
}

/** A stored log read back in full. */
export interface OpenedLog {
  meta: SessionMeta
  /** The readable events in stored order; corrupt lines and a torn last line are left out. */
  events: SessionEvent[]
  problems: LogProblem[]
  /** Where the log lives (the plain or the sealed file). */
  file: string
}

/** One stored session as `list()` and `stat()` see it: its header plus facts about the file. */
export type StoredSession = SessionMeta & {
  file: string
  /** Last modification of the file, epoch milliseconds. */
  updatedAt: number
  /** Size of the file on disk (compressed when sealed). */
  bytes: number
  /** Whether the log is sealed (compressed because the session was closed). */
  sealed: boolean
}

export interface ListOptions {
  /** Epoch milliseconds: leave out logs last modified before this time. */
  changedSince?: number
}

/** There is no stored log for the id. */
export class SessionNotFoundError extends Error {
  override name = 'SessionNotFoundError'
  constructor(
    readonly sessionId: string,
    where: string,
  ) {
    super(`no session ${sessionId} under ${where}`)
  }
}

/** A stored log cannot be read or written as asked: bad header, seq mismatch, unreadable file. */
export class SessionLogError extends Error {
  override name = 'SessionLogError'
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`)
  }
}

/** The session is open in this process, so its log cannot be removed (its writer would bring it back). */
export class SessionInUseError extends Error {
  override name = 'SessionInUseError'
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} is open in this process; close it before removing its log`)
  }
}

/** Who holds a session's log: a dsh process, as its provider recorded it. */
export interface SessionHolder {
  pid: number
  host: string
  /** Epoch milliseconds: when it took the session. */
  since: number
}

/** Another dsh process holds the session's log (it has the session open), so this one may not write it. */
export class SessionBusyError extends Error {
  override name = 'SessionBusyError'
  constructor(
    readonly sessionId: string,
    readonly holder: SessionHolder | undefined,
    /** Where the hold is recorded, to remove by hand if its holder is known to be gone. */
    readonly lease: string,
  ) {
    const who = holder
      ? `process ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}, since ${new Date(holder.since).toISOString()}`
      : 'a process that left no readable record'
    super(
      `session ${sessionId} is open in another dsh (${who}); finish or close it there first (if that process is gone, remove ${lease})`,
    )
  }
}

/** The log was written in a format newer than this dsh reads. */
export class SessionLogVersionError extends SessionLogError {
  override name = 'SessionLogVersionError'
}

/**
 * `ctx.sessionPersistence`: where session logs are kept. A provider plugin
 * extends this class and is the one place that knows files, formats and
 * compression; the writer plugin (`@dsh/session-persistence`) feeds it from
 * `ctx.sessions`, and resume, listings and exports read through it.
 *
 * Every method is safe to call concurrently; a provider serializes the
 * operations on one session.
 */
export abstract class SessionPersistence extends Service {
  /** The provider's own context (cordis swaps `ctx` for the caller's on access). */
  protected readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'sessionPersistence')
    this.home = ctx
  }

  /**
   * Appends `events` to the log of `meta.id`, in order, durably. The first
   * call creates the log (header first; with no events, the header alone,
   * which is how a new session is made durable before it is announced). For an existing log the first
   * event's seq must follow the last stored seq, and seqs must increase
   * within the batch; otherwise nothing is written and a `SessionLogError`
   * says why. A sealed log is unsealed first.
   */
  abstract append(meta: SessionMeta, events: readonly SessionEvent[]): Promise<void>

  /**
   * Reads the whole log. Corrupt lines and a torn last line are reported in
   * `problems` and skipped. Throws `SessionNotFoundError` for an unknown id,
   * `SessionLogVersionError` for a log written by a newer dsh, and
   * `SessionLogError` when the header is unreadable.
   */
  abstract open(id: SessionId): Promise<OpenedLog>

  /**
   * Every stored session, from headers only, most recently updated first.
   * Unreadable headers are skipped with a warning. With `changedSince`, only
   * logs modified at or after that time (epoch ms) are listed, and only
   * their headers are read.
   */
  abstract list(options?: ListOptions): Promise<StoredSession[]>

  /** One stored session from its header; throws `SessionNotFoundError` for an unknown id. */
  abstract stat(id: SessionId): Promise<StoredSession>

  /** The log as JSONL text (decompressed when sealed). */
  abstract export(id: SessionId): Promise<string>

  /** The session is closed: compress its log. A no-op when already sealed. */
  abstract seal(id: SessionId): Promise<void>

  /**
   * Removes the stored log; throws `SessionNotFoundError` for an unknown id
   * and `SessionBusyError` when another process holds it.
   */
  abstract delete(id: SessionId): Promise<void>

  /**
   * Takes this process's hold on the log of `id`, so that no other process
   * writes it while this one has the session open (resume calls it before it
   * reads the log; `append` takes it too). Throws `SessionBusyError` when a
   * live process holds it; a hold whose process is gone is taken over. The
   * hold lasts until `release(id)` or until the provider is disposed. This
   * default keeps no hold: a provider whose store other processes share
   * overrides it.
   */
  async claim(_id: SessionId): Promise<void> {}

  /** Gives up this process's hold on `id` (a no-op when it holds none). */
  async release(_id: SessionId): Promise<void> {}

  /** The live process other than this one that holds `id`, if any (this default knows of none). */
  async holder(_id: SessionId): Promise<SessionHolder | undefined> {
    return undefined
  }

  /**
   * `entries` for a listing, each with `openIn` when another live process
   * holds its session (`holder`). A hold that cannot be read counts as none:
   * a listing shows what it can.
   */
  async withHolders<E extends { sessionId: string }>(
    entries: readonly E[],
  ): Promise<Array<E & { openIn?: SessionHolder }>> {
    return Promise.all(
      entries.map(async (entry) => {
        const openIn = await this.holder(entry.sessionId as SessionId).catch(() => undefined)
        return openIn ? { ...entry, openIn } : entry
      }),
    )
  }

  /**
   * Removes the stored log of a session that is not open in this process
   * (`ctx.sessions`): an open one is refused with `SessionInUseError`.
   * Throws `SessionNotFoundError` for an unknown id.
   */
  async remove(id: SessionId): Promise<void> {
    if (this.home.get('sessions')?.get(id)) throw new SessionInUseError(id)
    await this.delete(id)
  }
}
