import {
  ApiError,
  type DshApi,
  type ImageAttachment,
  isEvent,
  type LiveConnection,
  type SessionDetail,
  type SessionEvent,
  type SessionId,
  type SessionPatch,
} from '@dsh/web-client'
import { readRecent } from '../lib/recent-history.ts'
import type { Readable } from '../lib/store.ts'
import { ConversationModel, textOf } from './conversation.ts'
import type { ConversationState } from './nodes.ts'

export interface QueuedItem {
  id: number
  text: string
  images: number
  /**
   * `held`: kept in this tab until the running turn ends (it can still be
   * edited or removed); `sending`: posted, not started yet; `queued`: the
   * server queued it behind work it was already running.
   */
  state: 'held' | 'sending' | 'queued'
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
  /** The images of held items, sent with them. */
  private readonly heldImages = new Map<number, ImageAttachment[]>()

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
        if (status === 'idle') {
          this.patch({ queued: this.view.queued.filter((q) => q.state !== 'queued') })
          this.sendNextHeld()
        }
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

  /** Sends a prompt now; while a turn runs the server queues it as a follow-up, shown until it starts. */
  async send(text: string, images: ImageAttachment[] = []): Promise<void> {
    const item: QueuedItem = { id: this.nextQueued++, text, images: images.length, state: 'sending' }
    this.patch({ queued: [...this.view.queued, item] })
    await this.post(item, images)
  }

  /**
   * Queues a prompt for after the running turn (and the prompts queued before
   * it). It stays in this tab, where it can be edited or removed, until its
   * turn comes; with no turn running it is sent at once.
   */
  async enqueue(text: string, images: ImageAttachment[] = []): Promise<void> {
    if (!this.view.conversation.running && !this.view.queued.some((q) => q.state === 'held'))
      return this.send(text, images)
    const item: QueuedItem = { id: this.nextQueued++, text, images: images.length, state: 'held' }
    this.heldImages.set(item.id, images)
    this.patch({ queued: [...this.view.queued, item] })
  }

  /** Changes the text of a held prompt. */
  editQueued(id: number, text: string): void {
    this.patch({ queued: this.view.queued.map((q) => (q.id === id && q.state === 'held' ? { ...q, text } : q)) })
  }

  /** Drops a held prompt before it is sent. */
  removeQueued(id: number): void {
    this.heldImages.delete(id)
    this.patch({ queued: this.view.queued.filter((q) => !(q.id === id && q.state === 'held')) })
  }

  /**
   * Steers the running turn: the message reaches the model with the turn's
   * next step. When the turn has ended meanwhile (the server refuses with
   * 400), it is sent as a prompt of its own instead.
   */
  async steer(text: string, images: ImageAttachment[] = []): Promise<void> {
    if (!this.view.conversation.running) return this.send(text, images)
    try {
      await this.api.steer(this.id, images.length ? { text, images } : { text })
    } catch (error) {
      if (error instanceof ApiError && error.status === 400 && !this.view.conversation.running)
        return this.send(text, images)
      throw error
    }
  }

  /** Changes the session's settings (model, effort, preset, network, plan mode), then reads them back. */
  async configure(change: SessionPatch): Promise<void> {
    await this.api.updateSession(this.id, change)
    const { session } = await this.api.getSession(this.id, { tail: 1 })
    if (change.planMode !== undefined)
      this.change((model) => model.setPlanMode(session.plan ?? change.planMode ?? false))
    this.patch({ meta: session })
  }

  private async post(item: QueuedItem, images: ImageAttachment[]): Promise<void> {
    const { text } = item
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

  /** The session went idle: the oldest held prompt is sent, the others wait for its turn to end. */
  private sendNextHeld(): void {
    const next = this.view.queued.find((q) => q.state === 'held')
    if (!next || this.disposed) return
    const images = this.heldImages.get(next.id) ?? []
    this.heldImages.delete(next.id)
    const item: QueuedItem = { ...next, state: 'sending' }
    this.patch({ queued: this.view.queued.map((q) => (q.id === next.id ? item : q)) })
    this.post(item, images).catch((error: unknown) => {
      this.onError?.(error)
    })
  }

  /** Reports a failure that no caller awaits (a held prompt that could not be sent). */
  onError: ((error: unknown) => void) | undefined

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
    const index = this.view.queued.findIndex((q) => q.state !== 'held' && q.text === text)
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
