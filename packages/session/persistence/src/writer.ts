import { type Context, Schema } from '@dsh/cordis'
import type { Session, SessionEvent } from '@dsh/session'
import { type SessionPersistence, SessionNotFoundError } from './seam.ts'

export const name = 'session-persistence'
export const inject = ['sessions', 'sessionPersistence']

export interface SessionWriterConfig {
  batchDelayMs: number
  seal: boolean
}

export const Config: Schema<Partial<SessionWriterConfig>, SessionWriterConfig> = Schema.object({
  batchDelayMs: Schema.natural()
    .default(200)
    .description(
      'How long the first unwritten event waits for others to share its write, in milliseconds. A `turn/end` is written at once.',
    ),
  seal: Schema.boolean().default(true).description('Seal (compress) a session log when the session is closed.'),
})

type Logger = ReturnType<Context['logger']>

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * The pending events of one session and the writes that carry them to the
 * store, one at a time. A write that fails puts its events back in front of
 * the queue; the next event or flush tries again.
 */
class SessionWriter {
  private pending: SessionEvent[] = []
  private timer: ReturnType<typeof setTimeout> | undefined
  private chain: Promise<unknown> = Promise.resolve()
  /** Whether this process has written to (or found) the stored log. */
  stored: boolean

  constructor(
    readonly session: Session,
    private readonly persistence: SessionPersistence,
    private readonly logger: Logger,
    private readonly delayMs: number,
    /** Set for a session this writer did not see created: its stored tail is unknown until read. */
    private catchUp: boolean,
    stored: boolean,
  ) {
    this.stored = stored
  }

  /** A catch-up writer that has seen no event: a previous writer already stored everything it could add. */
  get untouched(): boolean {
    return this.catchUp && this.pending.length === 0
  }

  /** Waits for the write in flight, if any, without starting one. */
  settle(): Promise<unknown> {
    this.stopTimer()
    return this.chain
  }

  enqueue(events: readonly SessionEvent[]): void {
    this.pending.push(...events)
  }

  /** Opens the batching window unless one is open. */
  schedule(): void {
    if (this.timer) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.write()
    }, this.delayMs)
  }

  /** Writes what is pending now, after any write in flight. Resolves to whether everything pending made it. */
  write(): Promise<boolean> {
    this.stopTimer()
    const run = this.chain.then(() => this.writeOnce())
    this.chain = run
    return run
  }

  stopTimer(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
  }

  private async writeOnce(): Promise<boolean> {
    const id = this.session.id
    try {
      if (this.catchUp) await this.readStoredTail()
    } catch (error) {
      this.logger.error('session %s: cannot read the stored log to continue it: %s', id, describe(error))
      return false
    }
    // Nothing pending: done, unless the log does not exist yet, in which case its header is written alone.
    if (this.pending.length === 0 && this.stored) return true
    const batch = this.pending
    this.pending = []
    try {
      await this.persistence.append(this.session.meta, batch)
      this.stored = true
      return true
    } catch (error) {
      this.pending = batch.concat(this.pending)
      this.logger.error(
        'session %s: writing %d event(s) failed (kept for the next try): %s',
        id,
        batch.length,
        describe(error),
      )
      return false
    }
  }

  /** Queues every event of the session after the last stored one. */
  private async readStoredTail(): Promise<void> {
    let last = -1
    try {
      const log = await this.persistence.open(this.session.id)
      last = log.events.at(-1)?.seq ?? -1
      this.stored = true
    } catch (error) {
      if (!(error instanceof SessionNotFoundError)) throw error
    }
    this.pending = this.session.events.filter((event) => event.seq > last)
    this.catchUp = false
  }
}

/**
 * Writes every session of `ctx.sessions` through `ctx.sessionPersistence`:
 * batched appends, an immediate write at each `turn/end`, a full drain on
 * `session/flush`, `session/closed` and dispose, and a seal on close.
 */
export function apply(ctx: Context, config: SessionWriterConfig) {
  const persistence = ctx.sessionPersistence
  const sessions = ctx.sessions
  const logger = ctx.logger('session-persistence')
  const writers = new Map<Session, SessionWriter>()
  let stopped = false

  const writerOf = (session: Session, fresh = false): SessionWriter => {
    let writer = writers.get(session)
    if (!writer) {
      const stored = sessions.seedIsStored(session)
      writer = new SessionWriter(session, persistence, logger, config.batchDelayMs, !fresh, stored)
      writers.set(session, writer)
    }
    return writer
  }

  // Sessions opened before this plugin started (a reload): continue after what is stored.
  for (const session of sessions.list()) writerOf(session)

  ctx.on('session/created', (session) => {
    if (stopped) return
    const writer = writerOf(session, true)
    // A fork's inherited prefix is not stored yet; a resume's is.
    if (!sessions.seedIsStored(session) && session.events.length) {
      writer.enqueue(session.events)
      writer.schedule()
    }
  })

  ctx.on('session/event', (session, event) => {
    if (stopped) return
    const writer = writerOf(session)
    writer.enqueue([event])
    if (event.type === 'turn/end') void writer.write()
    else writer.schedule()
  })

  // Also waits for a write in flight: its events were appended before the flush.
  ctx.on('session/flush', async (session) => {
    await writers.get(session)?.write()
  })

  ctx.on('session/closed', async (session) => {
    const writer = writers.get(session)
    if (!writer) return
    if (!(await writer.write())) return // kept; dispose tries once more
    writers.delete(session)
    if (config.seal && writer.stored) {
      try {
        await persistence.seal(session.id)
      } catch (error) {
        logger.error('session %s: sealing the log failed: %s', session.id, describe(error))
      }
    }
    // Other processes may open the session now.
    await persistence
      .release(session.id)
      .catch((error: unknown) =>
        logger.error('session %s: giving up its lease failed: %s', session.id, describe(error)),
      )
  })

  // Dispose (also how Ctrl+C saves): write everything pending, then stop.
  ctx.effect(
    () => () => {
      stopped = true
      const drains = [...writers.values()].map((writer) => (writer.untouched ? writer.settle() : writer.write()))
      return Promise.all(drains).then(() => writers.clear())
    },
    'session-persistence drain',
  )
}
