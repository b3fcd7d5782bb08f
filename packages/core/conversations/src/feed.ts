import type { Context } from '@dsh/cordis'
import type { SessionEvent } from '@dsh/session'
import type { LogView, SessionAccess } from './access.ts'

/**
 * One watcher's resumable stream of a session's events: the log after a
 * sequence number, then the events as they are published, each delivered
 * once and in order. `start` reads the log (a stored one asynchronously),
 * and the replay and the switch to live delivery happen in one synchronous
 * step, so an event published meanwhile is either in the replay or
 * delivered live, never both, never neither. A gap in live delivery is
 * filled from the live log.
 */
export class EventFeed {
  /** False while the replay is being read; live events wait for it. */
  private ready = false

  constructor(
    private readonly ctx: Context,
    readonly sessionId: string,
    /** The highest seq delivered; -1 before any. */
    private lastSeq: number,
    private readonly deliver: (event: SessionEvent, cwd: string) => void,
  ) {}

  /**
   * Replays the events after the start point and goes live. Undefined when
   * `wanted` says no once the log is read (the watcher left or started
   * another feed meanwhile); else the view and the events it was read from.
   */
  async start(
    access: SessionAccess,
    wanted: () => boolean,
  ): Promise<{ view: LogView; events: readonly SessionEvent[] } | undefined> {
    const view = await access.view(this.sessionId)
    if (!wanted()) return undefined
    const live = this.ctx.sessions.get(this.sessionId)
    const events = live ? this.ctx.sessions.publishedEvents(live) : view.events
    for (const event of events) {
      if (event.seq <= this.lastSeq) continue
      this.deliver(event, view.meta.cwd)
      this.lastSeq = event.seq
    }
    this.ready = true
    return { view, events }
  }

  /** Whether the replay is done, so that live events are delivered. */
  get live(): boolean {
    return this.ready
  }

  /** A published event of the session: delivered (after any it missed) unless it was already. */
  push(event: SessionEvent): void {
    if (!this.ready || event.seq <= this.lastSeq) return
    const session = this.ctx.sessions.get(this.sessionId)
    const cwd = session?.meta.cwd ?? ''
    if (event.seq > this.lastSeq + 1)
      for (const missed of session?.events ?? [])
        if (missed.seq > this.lastSeq && missed.seq < event.seq) this.deliver(missed, cwd)
    this.deliver(event, cwd)
    this.lastSeq = event.seq
  }
}
