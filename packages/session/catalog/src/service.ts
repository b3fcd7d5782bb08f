import { type Context, Service } from '@dsh/cordis'
import type { Session, SessionEvent } from '@dsh/session'
import { checkCatalogPath, type SessionCatalogConfig, storeOptions } from './config.ts'
import { digestEvents, foldEvent, type SessionDigest } from './digest.ts'
import { type BuildOptions, buildFromLogs, catchUpWithLogs } from './reindex.ts'
import { removeSessionTree } from './remove.ts'
import { openDatabase } from './schema.ts'
import { CatalogStore, type IndexedSession } from './store.ts'
import type { CatalogEntry, ListPage, ListQuery, SearchHit, SearchOptions } from './types.ts'

declare module '@dsh/cordis' {
  interface Context {
    sessionCatalog: SessionCatalog
  }
}

/** A session open in this process and what of it the catalog has written. */
interface LiveSession {
  session: Session
  /** Events not yet folded into `digest`. */
  pending: SessionEvent[]
  digest?: SessionDigest
  /** Unset until the first write, and after a rebuild or a failed write: the next write starts from the whole log. */
  indexed?: IndexedSession
  /** Closed during a rebuild: written once more after it, then forgotten. */
  closed?: boolean
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * `ctx.sessionCatalog`: a SQLite index of every stored session (title,
 * folder, times, parent, message and token counts) with full-text search
 * over what the user and the model wrote. It follows `session/event` as
 * sessions grow and can be rebuilt from the logs at any time; the logs stay
 * the truth.
 */
export class SessionCatalog extends Service {
  private readonly home: Context
  private readonly file: string
  private store: CatalogStore | undefined
  private opening: Promise<CatalogStore> | undefined
  private readonly live = new Map<string, LiveSession>()
  private readonly logger: ReturnType<Context['logger']>
  private timer: ReturnType<typeof setTimeout> | undefined
  private openTimer: ReturnType<typeof setTimeout> | undefined
  private building: Promise<{ sessions: number; ms: number }> | undefined
  private stopped = false

  constructor(
    ctx: Context,
    private readonly config: SessionCatalogConfig,
  ) {
    super(ctx, 'sessionCatalog')
    this.home = ctx
    this.logger = ctx.logger('session-catalog')
    this.file = checkCatalogPath(config.path)

    for (const session of ctx.sessions.list()) this.track(session)
    ctx.on('session/created', (session) => this.track(session))
    ctx.on('session/event', (session, event) => {
      const live = this.live.get(session.id)
      if (!live || live.session !== session) return this.track(session)
      live.pending.push(event)
      this.schedule(event.type === 'turn/end' ? 0 : config.flushDelayMs)
    })
    ctx.on('session/flush', async () => this.flush())
    ctx.on('session/closed', async (session) => {
      const live = this.live.get(session.id)
      if (live?.session !== session) return
      live.closed = true
      this.flush()
    })
    // Off the start-up path: the first read or write opens it sooner.
    this.openTimer = setTimeout(() => void this.open().catch(() => {}), config.openDelayMs)
    ctx.effect(
      () => () => {
        this.stopped = true
        this.cancelTimer()
        clearTimeout(this.openTimer)
        const settle = (work: Promise<unknown> | undefined) => (work ?? Promise.resolve()).catch(() => {})
        // Never opened yet, but events are waiting: open it to write them.
        const opening = this.opening ?? (this.dirty().length ? this.open() : undefined)
        return settle(opening)
          .then(() => settle(this.building))
          .then(() => this.close())
      },
      'session catalog database',
    )
  }

  async list(query: ListQuery = {}): Promise<ListPage> {
    return (await this.settled()).list(query)
  }

  async search(text: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    return (await this.settled()).search(text, options)
  }

  async get(id: string): Promise<CatalogEntry | undefined> {
    return (await this.settled()).get(id)
  }

  /** Rebuilds the whole catalog from the stored logs, after any rebuild already running. */
  async reindex(): Promise<{ sessions: number; ms: number }> {
    const store = await this.open()
    while (this.building) await this.building.catch(() => {})
    return this.maintain(store, 'rebuild')
  }

  /**
   * Deletes a session's log and catalog entry, and those of its subagent
   * sessions (see `removeSessionTree`); resolves with the ids deleted.
   */
  async remove(id: string): Promise<string[]> {
    return removeSessionTree(await this.settled(), this.home.sessionPersistence, id)
  }

  private track(session: Session): void {
    if (this.stopped) return
    this.live.set(session.id, { session, pending: [] })
    if (session.events.length) this.schedule(this.config.flushDelayMs)
  }

  /**
   * Opens the database once; a missing, outdated or unfinished one starts a
   * rebuild from the logs, a current one catches up with the logs modified
   * since it last did.
   */
  private open(): Promise<CatalogStore> {
    this.opening ??= (async () => {
      clearTimeout(this.openTimer)
      try {
        const { db, needsBuild } = await openDatabase(this.file, {
          busyTimeoutMs: this.config.busyTimeoutMs,
          onReplace: (reason) => this.logger.warn(reason),
        })
        const store = new CatalogStore(db, storeOptions(this.config))
        this.store = store
        // Disposed meanwhile: dispose writes what is pending and closes it.
        if (this.stopped) return store
        void this.maintain(store, needsBuild ? 'rebuild' : 'catch-up').catch(() => {})
        return store
      } catch (error) {
        this.logger.error('cannot open the session catalog at %s: %s', this.file, describe(error))
        throw error
      }
    })()
    return this.opening
  }

  /** Opens the database, waits for a rebuild in progress, then writes what is pending so reads see every event so far. */
  private async settled(): Promise<CatalogStore> {
    if (this.stopped) throw new Error('the session catalog has been disposed')
    const store = await this.open()
    while (this.building) await this.building.catch(() => {})
    this.flush()
    return store
  }

  private schedule(delayMs: number): void {
    if (this.stopped || this.building) return
    if (this.timer && delayMs > 0) return
    this.cancelTimer()
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.flush()
    }, delayMs)
  }

  private cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
  }

  /** Writes the pending events of every live session in one transaction. A failure is logged; those sessions are rewritten whole next time. */
  private flush(): void {
    this.cancelTimer()
    const store = this.store
    if (!store) {
      if (!this.stopped) void this.open().catch(() => {})
      return
    }
    if (this.building || !store.db.open) return
    const dirty = this.dirty()
    try {
      if (dirty.length) {
        store.transaction(() => {
          for (const live of dirty) this.write(store, live)
        })
      }
    } catch (error) {
      for (const live of dirty) live.indexed = undefined
      this.logger.warn('indexing %d session(s) failed; retrying with the next event: %s', dirty.length, describe(error))
      return
    }
    for (const [id, live] of this.live) if (live.closed) this.live.delete(id)
  }

  /** The sessions with events the catalog has not written. */
  private dirty(): LiveSession[] {
    return [...this.live.values()].filter(
      (live) => live.session.events.length && (!live.indexed || live.pending.length),
    )
  }

  private write(store: CatalogStore, live: LiveSession): void {
    const { session } = live
    if (!live.indexed || !live.digest || !store.isCurrent(session.id, live.indexed)) {
      live.pending = []
      const { digest, texts } = digestEvents(session.meta, session.events)
      live.digest = digest
      live.indexed = store.replace(digest, texts)
      return
    }
    const texts: string[] = []
    for (const event of live.pending) {
      const text = foldEvent(live.digest, event)
      if (text) texts.push(text)
    }
    live.pending = []
    store.update(live.indexed, live.digest, texts)
  }

  /** Rebuilds the catalog from every log, or catches up with the logs changed since it last did; reads wait for it. */
  private maintain(store: CatalogStore, kind: 'rebuild' | 'catch-up'): Promise<{ sessions: number; ms: number }> {
    if (this.stopped) return Promise.reject(new Error('the session catalog has been disposed'))
    this.cancelTimer()
    const started = performance.now()
    const options: BuildOptions = {
      concurrency: this.config.reindexConcurrency,
      batchSize: this.config.reindexBatch,
      onProblem: (message) => this.logger.warn(message),
      stopped: () => this.stopped,
    }
    const run =
      kind === 'rebuild'
        ? buildFromLogs(store, this.home.sessionPersistence, options)
        : catchUpWithLogs(store, this.home.sessionPersistence, options)
    const building = run
      .then((sessions) => {
        if (sessions === undefined) throw new Error(`the session catalog was disposed during its ${kind}`)
        return { sessions, ms: Math.round(performance.now() - started) }
      })
      .catch((error: unknown) => {
        if (!this.stopped) {
          const what =
            kind === 'rebuild'
              ? 'rebuilding the session catalog from the logs'
              : 'catching up the session catalog with the logs'
          this.logger.error('%s failed: %s', what, describe(error))
        }
        throw error
      })
      .finally(() => {
        this.building = undefined
        // The logs may lag behind the sessions open here: write those from memory.
        for (const live of this.live.values()) live.indexed = undefined
        if (!this.stopped) this.flush()
      })
    this.building = building
    return building
  }

  private close(): void {
    if (!this.store?.db.open) return
    this.flush()
    this.store.close()
  }
}
