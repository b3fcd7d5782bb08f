import {
  ApiError,
  type DshApi,
  type ImageAttachment,
  isEvent,
  type LiveConnection,
  type SessionDetail,
  type SessionEvent,
  type SessionId,
} from '@dsh/web-client'
import { readRecent } from '../lib/recent-history.ts'
import type { Readable } from '../lib/store.ts'
import { ConversationModel, textOf } from './conversation.ts'
import type { ConversationState } from './nodes.ts'

export interface QueuedItem {
  id: number
  text: string
  images: number
  /** `sending`: posted, no answer yet; `queued`: waiting for the running turn to end. */
  state: 'sending' | 'queued'
}

export interface SessionView {
  status: 'loading' | 'ready' | 'missing' | 'error'
  error?: string
  meta?: SessionDetail['session']
  conversation: ConversationState
  queued: readonly QueuedItem[]
}

/**
 * One open session: its log restored over HTTP, then followed live over the
 * socket from the last seq loaded. Renders are batched to one per frame.
 */
export class SessionController implements Readable<SessionView> {
  private model = new ConversationModel()
  /**
   * While the conversation shows only the recent part of the log: where the
   * part left out ends, and every change made to the model since, to replay
   * over the whole log once it is read.
   */
  private partial: { before: number; changes: Array<(model: ConversationModel) => void>; reading: boolean } | undefined
  private view: SessionView
  private readonly listeners = new Set<() => void>()
  private unsubscribe: (() => void) | undefined
  private frame: number | undefined
  private disposed = false
  private nextQueued = 1

  constructor(
    private readonly api: DshApi,
    private readonly live: LiveConnection,
    readonly id: SessionId,
  ) {
    this.view = { status: 'loading', conversation: this.model.snapshot(), queued: [] }
  }

  get = (): SessionView => this.view

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /**
   * Restores the session from its log, then follows it live. `prefetched`: a
   * load already under way, or already done (then the restore happens before
   * this returns, so the first render shows the conversation).
   */
  async load(prefetched?: SessionDetail | Promise<SessionDetail>): Promise<void> {
    let detail: SessionDetail
    if (prefetched && !(prefetched instanceof Promise)) {
      detail = prefetched
    } else {
      try {
        detail = await (prefetched ?? readRecent(this.api, this.id))
      } catch (error) {
        if (this.disposed) return
        const missing =
          error instanceof ApiError &&
          (error.status === 404 || error.code === 'unknown-session' || error.code === 'not-found')
        this.patch({
          status: missing ? 'missing' : 'error',
          error: error instanceof Error ? error.message : String(error),
        })
        return
      }
    }
    if (this.disposed) return
    if (detail.earlier) {
      this.model.startFromRecent(detail.earlier)
      this.partial = { before: detail.earlier.before, changes: [], reading: false }
    }
    const { events, session } = detail
    this.change((model) => {
      for (const event of events) model.applyEvent(event)
      model.setRunning(session.running)
    })
    this.patch({ status: 'ready', meta: detail.session })
    this.unsubscribe = this.live.subscribe(this.id, this.model.snapshot().lastSeq, {
      event: (event) => {
        this.change((model) => model.applyEvent(event))
        if (isEvent(event, 'user/message')) this.dequeue(textOf(event.data.message.content))
        this.schedule()
      },
      delta: (delta) => {
        this.change((model) => model.applyDelta(delta))
        this.schedule()
      },
      status: (status) => {
        this.change((model) => model.setRunning(status === 'running'))
        if (status === 'idle') this.patch({ queued: this.view.queued.filter((q) => q.state === 'sending') })
        this.schedule()
      },
      subscribed: ({ running }) => {
        this.change((model) => model.setRunning(running))
        this.schedule()
      },
      usage: (report) => {
        this.change((model) => model.applyUsage(report))
        this.schedule()
      },
      resumed: () => {
        this.change((model) => model.markResumed())
        this.schedule()
      },
    })
  }

  /**
   * When only the recent part of the log was loaded: reads the part left out
   * and shows the whole conversation, the same as if it had been loaded at
   * once (rows keep their keys, so the ones on screen stay as they are).
   */
  async loadEarlier(): Promise<void> {
    const partial = this.partial
    if (!partial || partial.reading) return
    partial.reading = true
    let events: SessionEvent[]
    try {
      ;({ events } = await this.api.getEvents(this.id, partial.before))
    } catch (error) {
      if (this.disposed) return
      this.partial = undefined
      this.model.earlierFailed(error instanceof Error ? error.message : String(error))
      this.patch({})
      return
    }
    if (this.disposed) return
    const whole = new ConversationModel()
    for (const event of events) whole.applyEvent(event)
    for (const change of partial.changes) change(whole)
    this.partial = undefined
    this.model = whole
    this.patch({})
    performance.mark('dsh:session-whole')
  }

  /** Applies a change to the model, kept for the replay over the whole log while only part of it is loaded. */
  private change(apply: (model: ConversationModel) => void): void {
    apply(this.model)
    this.partial?.changes.push(apply)
  }

  /** Sends a prompt; while a turn runs the server queues it as a follow-up, shown until it starts. */
  async send(text: string, images: ImageAttachment[] = []): Promise<void> {
    const item: QueuedItem = { id: this.nextQueued++, text, images: images.length, state: 'sending' }
    this.patch({ queued: [...this.view.queued, item] })
    try {
      const { queued } = await this.api.sendMessage(this.id, images.length ? { text, images } : { text })
      const stillThere = this.view.queued.some((q) => q.id === item.id)
      if (queued && stillThere)
        this.patch({ queued: this.view.queued.map((q) => (q.id === item.id ? { ...q, state: 'queued' } : q)) })
      else if (!queued) this.patch({ queued: this.view.queued.filter((q) => q.id !== item.id) })
      if (!this.view.conversation.running) {
        this.change((model) => model.setRunning(true))
        this.schedule()
      }
    } catch (error) {
      this.patch({ queued: this.view.queued.filter((q) => q.id !== item.id) })
      throw error
    }
  }

  async cancel(): Promise<void> {
    await this.api.cancel(this.id)
  }

  dispose(): void {
    this.disposed = true
    this.unsubscribe?.()
    if (this.frame !== undefined) cancelAnimationFrame(this.frame)
    this.listeners.clear()
  }

  /** A user message arrived: the oldest queued item with that text has started. */
  private dequeue(text: string): void {
    const index = this.view.queued.findIndex((q) => q.text === text)
    if (index >= 0) this.patch({ queued: this.view.queued.filter((_, i) => i !== index) })
  }

  private schedule(): void {
    if (this.frame !== undefined || this.disposed) return
    this.frame = requestAnimationFrame(() => {
      this.frame = undefined
      this.patch({})
    })
  }

  private patch(change: Partial<SessionView>): void {
    this.view = { ...this.view, ...change, conversation: this.model.snapshot() }
    for (const listener of this.listeners) listener()
  }
}
