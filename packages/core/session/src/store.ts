import { randomUUID } from 'node:crypto'
import { type Context, emitIsolated, ScopedRegistry, Service } from '@dsh/cordis'
import type { SessionEvent, SessionEventType, SessionId, SessionMeta } from './events.ts'
import { Session, type TextFilter } from './session.ts'

declare module '@dsh/cordis' {
  interface Context {
    sessions: SessionStore
  }
  interface Events {
    /** @mode emit (isolated): a session was opened in this process (new, resumed or forked). */
    'session/created'(session: Session): void
    /** @mode emit (isolated), synchronous: an event was appended. Persistence copies it here. */
    'session/event'(session: Session, event: SessionEvent): void
    /**
     * @mode emit (isolated): an event may now be shown outside this process.
     * Every event, in log order, after its `session/event`; while a hold is
     * on (`holdPublished`: a turn's events until its user input is stored),
     * later. Surfaces forward this one.
     */
    'session/published'(session: Session, event: SessionEvent): void
    /** @mode parallel: make everything appended so far durable. */
    'session/flush'(session: Session): Promise<void>
    /** @mode parallel: the session is done in this process; persistence seals it. */
    'session/closed'(session: Session): Promise<void>
  }
}

/** The core event types; plugins add theirs with `registerEventType`. */
export const CORE_EVENT_TYPES: readonly SessionEventType[] = [
  'turn/start',
  'turn/end',
  'step/start',
  'step/end',
  'system/message',
  'system/prompt-changed',
  'user/message',
  'assistant/message',
  'assistant/attempt',
  'tool/call',
  'tool/result',
  'request/header',
  'request/context',
  'session/end-seed',
  'llm/retry',
]

export class SessionFormatError extends Error {
  override name = 'SessionFormatError'
}

export function newSessionId(): SessionId {
  return `session-${randomUUID()}` as SessionId
}

export interface CreateSessionOptions {
  id?: SessionId
  cwd: string
  parentSession?: SessionId
  forkedFrom?: SessionId
  title?: string
  /** Earlier events: a resumed log (already stored) or a fork's inherited prefix (not yet stored). */
  seed?: readonly SessionEvent[]
  seedStored?: boolean
  /**
   * The seed's objects are handed over (fresh from `JSON.parse`, touched by
   * nothing else): they are checked and frozen in place instead of copied.
   */
  adoptSeed?: boolean
  createdAt?: number
}

/** `ctx.sessions`: the live sessions of this process. */
export class SessionStore extends Service {
  private readonly home: Context
  private readonly live = new Map<string, Session>()
  private readonly stored = new WeakSet<Session>()
  /** Sessions whose `session/published` is held back: the events waiting, and how many holds are on. */
  private readonly held = new WeakMap<Session, { events: SessionEvent[]; holds: number }>()
  private readonly eventTypes = new ScopedRegistry<true>('session event type')
  private readonly textFilters = new ScopedRegistry<TextFilter>('session text filter')

  constructor(ctx: Context) {
    super(ctx, 'sessions')
    this.home = ctx
  }

  /** Lets logs with events of `type` load; returns a disposer. */
  registerEventType(ctx: Context, type: string): () => void {
    return this.eventTypes.register(ctx, type, true)
  }

  /**
   * Rewrites the string values of every event before it enters any session
   * opened from now on (appends, and the seed of a resume or fork), so what
   * is logged, published and sent to the model is the rewritten text.
   * Returns a disposer; the filter also goes when `ctx` is disposed.
   */
  registerTextFilter(ctx: Context, name: string, filter: TextFilter): () => void {
    return this.textFilters.register(ctx, name, filter)
  }

  /** The registered filters as one, asked per event (see `TextFilter`). */
  private readonly filterText: TextFilter = () => {
    if (this.textFilters.size === 0) return undefined
    const maps = this.textFilters.values().flatMap((filter) => filter() ?? [])
    if (maps.length === 0) return undefined
    if (maps.length === 1) return maps[0]
    return (text) => maps.reduce((out, map) => map(out), text)
  }

  /**
   * `text` rewritten by the registered text filters, as a string of an event
   * would be: for what a surface shows that is not an event (a background
   * job's output), so it is redacted like the log.
   */
  filtered(text: string): string {
    const map = this.filterText()
    return map ? map(text) : text
  }

  isKnownType(type: string): boolean {
    return (CORE_EVENT_TYPES as readonly string[]).includes(type) || this.eventTypes.has(type)
  }

  /** Refuses events of a type nobody declared, unless marked ignorable; drops the ignorable ones. */
  checkLoadable(events: readonly SessionEvent[], where: string): SessionEvent[] {
    const out: SessionEvent[] = []
    // One lookup of the known types: method calls through the service proxy cost microseconds each.
    const known = new Set<string>([...CORE_EVENT_TYPES, ...this.eventTypes.keys()])
    for (const event of events) {
      if (known.has(event.type)) out.push(event)
      else if (!event.ignorable) {
        throw new SessionFormatError(
          `${where}: event ${event.seq} has type "${event.type}", which no loaded plugin declares (upgrade dsh or enable the plugin that wrote it)`,
        )
      }
    }
    return out
  }

  create(options: CreateSessionOptions): Session {
    const meta: SessionMeta = {
      id: options.id ?? newSessionId(),
      createdAt: options.createdAt ?? Date.now(),
      cwd: options.cwd,
    }
    if (options.parentSession) meta.parentSession = options.parentSession
    if (options.forkedFrom) meta.forkedFrom = options.forkedFrom
    if (options.title) meta.title = options.title
    if (options.seed?.length) meta.seedLength = options.seed.length
    if (this.live.has(meta.id)) throw new Error(`session ${meta.id} is already open`)
    let session: Session | undefined
    session = new Session(
      meta,
      options.seed ?? [],
      (event) => {
        void emitIsolated(this.home, 'session/event', session as Session, event)
        const held = this.held.get(session as Session)
        if (held) held.events.push(event)
        else void emitIsolated(this.home, 'session/published', session as Session, event)
      },
      options.adoptSeed === true,
      this.filterText,
    )
    if (options.seedStored) this.stored.add(session)
    this.live.set(meta.id, session)
    void emitIsolated(this.home, 'session/created', session)
    if (options.seed?.length && session.events.at(-1)?.type !== 'session/end-seed')
      session.append('session/end-seed', {})
    return session
  }

  /** Whether the session's seed was already stored when it was opened (a resume). */
  seedIsStored(session: Session): boolean {
    return this.stored.has(session)
  }

  get(id: string): Session | undefined {
    return this.live.get(id)
  }

  list(): Session[] {
    return [...this.live.values()]
  }

  async flush(session: Session): Promise<void> {
    await emitIsolated(this.home, 'session/flush', session)
  }

  /**
   * Holds back `session/published` for `session` from now on; events still
   * reach `session/event` (and storage) at once. The returned release flushes
   * the session, then publishes the held events in order; a second call
   * returns the first one's promise. With several holds on, the events wait
   * for the last release. The agent loop holds each turn until its user
   * input is stored, so no surface shows a turn whose message a crash
   * could lose.
   */
  holdPublished(session: Session): () => Promise<void> {
    let state = this.held.get(session)
    if (!state) {
      state = { events: [], holds: 0 }
      this.held.set(session, state)
    }
    const hold = state
    hold.holds++
    let released: Promise<void> | undefined
    return () => {
      released ??= this.flush(session).then(() => {
        if (--hold.holds === 0 && this.held.get(session) === hold) this.publishHeld(session)
      })
      return released
    }
  }

  /** The events of `session` already published: all of them but those a hold keeps back (always the last ones). */
  publishedEvents(session: Session): readonly SessionEvent[] {
    const waiting = this.held.get(session)?.events.length ?? 0
    return waiting ? session.events.slice(0, session.events.length - waiting) : session.events
  }

  private publishHeld(session: Session): void {
    const state = this.held.get(session)
    if (!state) return
    this.held.delete(session)
    for (const event of state.events) void emitIsolated(this.home, 'session/published', session, event)
  }

  async close(session: Session): Promise<void> {
    if (this.live.get(session.id) !== session) return
    await this.flush(session)
    // Stored now: nothing is held back any longer.
    this.publishHeld(session)
    this.live.delete(session.id)
    await emitIsolated(this.home, 'session/closed', session)
  }

  /**
   * A new session that starts with `source`'s events up to the end of turn
   * `throughTurn` (default: the whole log). The cut must be at a turn boundary.
   */
  fork(source: Session, options: { throughTurn?: number; cwd?: string } = {}): Session {
    const events = source.events
    let end = events.length
    if (options.throughTurn !== undefined) {
      const index = events.findIndex(
        (e) => e.type === 'turn/end' && (e as SessionEvent<'turn/end'>).data.turn === options.throughTurn,
      )
      if (index < 0) throw new Error(`session ${source.id} has no finished turn ${options.throughTurn} to fork at`)
      end = index + 1
    } else if (source.turnState().open) {
      throw new Error(`session ${source.id} is in the middle of a turn; fork at a finished turn`)
    }
    return this.create({ cwd: options.cwd ?? source.meta.cwd, forkedFrom: source.id, seed: events.slice(0, end) })
  }
}
