import type { ClientFrame, Delta, ServerFrame, SessionEvent, SessionId, UsageReport } from './types.ts'

export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed'

export interface SessionHandlers {
  /** A durable event, each seq at most once and in order. */
  event(event: SessionEvent): void
  delta?(delta: Delta): void
  status?(status: 'running' | 'idle'): void
  /** The server caught up: every event up to `lastSeq` has been delivered; `running` is the state now. */
  subscribed?(state: { lastSeq: number; running: boolean }): void
  /** The session's metered usage (tokens, cost, context), as the server computes it. */
  usage?(report: UsageReport): void
  /** The socket came back after a drop: missed events follow, but live deltas sent meanwhile are gone. */
  resumed?(): void
}

export interface LiveOptions {
  /** The socket URL; default `ws(s)://<page host>/api/ws`. */
  url?: string
  token?: string
  /** The WebSocket class; default the global one (pass `ws` under Node 20). */
  WebSocket?: typeof WebSocket
  /** First reconnect delay, doubled after each failed attempt up to `maxDelayMs`. */
  initialDelayMs?: number
  maxDelayMs?: number
  /** How often to ping an idle socket; a socket silent for `pingIntervalMs + pongTimeoutMs` is dropped and reopened. */
  pingIntervalMs?: number
  pongTimeoutMs?: number
}

interface Subscription {
  sessionId: SessionId
  /** Highest seq delivered (-1: none); the next subscribe asks for what comes after it. */
  lastSeq: number
  handlers: Set<SessionHandlers>
}

const OPEN = 1

/**
 * The live side of the API: one WebSocket carrying every subscribed
 * session. It reconnects with backoff and resumes each session from the last
 * seq it delivered, dropping anything already seen, so a handler sees every
 * durable event exactly once.
 */
export class LiveConnection {
  private readonly options: Required<Omit<LiveOptions, 'token' | 'url'>> & { url: string }
  private socket: WebSocket | undefined
  private readonly subscriptions = new Map<SessionId, Subscription>()
  private readonly frameListeners = new Set<(frame: ServerFrame) => void>()
  private readonly stateListeners = new Set<(state: ConnectionState) => void>()
  private currentState: ConnectionState = 'connecting'
  private attempts = 0
  private everOpened = false
  private closed = false
  private retryTimer: ReturnType<typeof setTimeout> | undefined
  private pingTimer: ReturnType<typeof setInterval> | undefined
  private lastHeard = 0

  constructor(options: LiveOptions = {}) {
    const base = options.url ?? defaultUrl()
    this.options = {
      url: options.token ? `${base}${base.includes('?') ? '&' : '?'}token=${encodeURIComponent(options.token)}` : base,
      WebSocket: options.WebSocket ?? globalThis.WebSocket,
      initialDelayMs: options.initialDelayMs ?? 250,
      maxDelayMs: options.maxDelayMs ?? 5000,
      pingIntervalMs: options.pingIntervalMs ?? 15_000,
      pongTimeoutMs: options.pongTimeoutMs ?? 10_000,
    }
    this.open()
  }

  get state(): ConnectionState {
    return this.currentState
  }

  /**
   * Follows a session from `afterSeq` (the last seq the caller already has;
   * omit to get the whole log). Returns the unsubscribe function.
   */
  subscribe(sessionId: SessionId, afterSeq: number | undefined, handlers: SessionHandlers): () => void {
    let subscription = this.subscriptions.get(sessionId)
    if (!subscription) {
      subscription = { sessionId, lastSeq: afterSeq ?? -1, handlers: new Set() }
      this.subscriptions.set(sessionId, subscription)
      this.sendSubscribe(subscription)
    }
    subscription.handlers.add(handlers)
    const owned = subscription
    return () => {
      owned.handlers.delete(handlers)
      if (owned.handlers.size > 0 || this.subscriptions.get(sessionId) !== owned) return
      this.subscriptions.delete(sessionId)
      this.send({ type: 'unsubscribe', sessionId })
    }
  }

  /** Every frame the server sends (approvals, questions, list changes, errors included). */
  onFrame(listener: (frame: ServerFrame) => void): () => void {
    this.frameListeners.add(listener)
    return () => this.frameListeners.delete(listener)
  }

  onState(listener: (state: ConnectionState) => void): () => void {
    this.stateListeners.add(listener)
    return () => this.stateListeners.delete(listener)
  }

  /** Drops the socket as a network failure would; it reconnects and resumes. */
  drop(): void {
    this.socket?.close()
  }

  close(): void {
    this.closed = true
    clearTimeout(this.retryTimer)
    clearInterval(this.pingTimer)
    this.socket?.close()
    this.setState('closed')
  }

  private open(): void {
    if (this.closed) return
    this.setState(this.everOpened ? 'reconnecting' : 'connecting')
    let socket: WebSocket
    try {
      socket = new this.options.WebSocket(this.options.url)
    } catch {
      this.scheduleReconnect()
      return
    }
    this.socket = socket
    socket.onopen = () => {
      if (this.socket !== socket) return
      const resumed = this.everOpened
      this.everOpened = true
      this.attempts = 0
      this.lastHeard = Date.now()
      this.setState('open')
      for (const subscription of this.subscriptions.values()) this.sendSubscribe(subscription)
      if (resumed)
        for (const subscription of this.subscriptions.values()) for (const h of subscription.handlers) h.resumed?.()
      this.startPing()
    }
    socket.onmessage = (message: MessageEvent) => {
      if (this.socket !== socket) return
      this.lastHeard = Date.now()
      const frame = parseFrame(message.data)
      if (frame) this.dispatch(frame)
    }
    socket.onclose = () => {
      if (this.socket !== socket) return
      this.socket = undefined
      clearInterval(this.pingTimer)
      this.scheduleReconnect()
    }
    socket.onerror = () => {
      // onclose follows and schedules the reconnect.
    }
  }

  private scheduleReconnect(): void {
    if (this.closed) return
    this.setState(this.everOpened ? 'reconnecting' : 'connecting')
    const delay = Math.min(this.options.maxDelayMs, this.options.initialDelayMs * 2 ** this.attempts)
    this.attempts += 1
    clearTimeout(this.retryTimer)
    this.retryTimer = setTimeout(() => this.open(), delay * (0.75 + Math.random() * 0.5))
  }

  private startPing(): void {
    clearInterval(this.pingTimer)
    const { pingIntervalMs, pongTimeoutMs } = this.options
    this.pingTimer = setInterval(() => {
      if (Date.now() - this.lastHeard > pingIntervalMs + pongTimeoutMs) {
        this.socket?.close()
        return
      }
      this.send({ type: 'ping' })
    }, pingIntervalMs)
  }

  private dispatch(frame: ServerFrame): void {
    if (
      frame.type === 'event' ||
      frame.type === 'delta' ||
      frame.type === 'status' ||
      frame.type === 'subscribed' ||
      frame.type === 'usage'
    ) {
      const subscription = this.subscriptions.get(frame.sessionId)
      if (subscription) deliver(subscription, frame)
    }
    for (const listener of this.frameListeners) listener(frame)
  }

  private sendSubscribe(subscription: Subscription): void {
    const { sessionId, lastSeq } = subscription
    this.send(lastSeq < 0 ? { type: 'subscribe', sessionId } : { type: 'subscribe', sessionId, afterSeq: lastSeq })
  }

  private send(frame: ClientFrame): void {
    if (this.socket?.readyState === OPEN) this.socket.send(JSON.stringify(frame))
  }

  private setState(state: ConnectionState): void {
    if (state === this.currentState) return
    this.currentState = state
    for (const listener of this.stateListeners) listener(state)
  }
}

function deliver(subscription: Subscription, frame: Extract<ServerFrame, { sessionId: SessionId }>): void {
  if (frame.type === 'event') {
    if (frame.event.seq <= subscription.lastSeq) return
    subscription.lastSeq = frame.event.seq
    for (const handlers of subscription.handlers) handlers.event(frame.event)
  } else if (frame.type === 'delta') {
    for (const handlers of subscription.handlers) handlers.delta?.(frame.delta)
  } else if (frame.type === 'status') {
    for (const handlers of subscription.handlers) handlers.status?.(frame.status)
  } else if (frame.type === 'subscribed') {
    for (const handlers of subscription.handlers)
      handlers.subscribed?.({ lastSeq: frame.lastSeq, running: frame.running })
  } else if (frame.type === 'usage') {
    for (const handlers of subscription.handlers) handlers.usage?.(frame.report)
  }
}

function parseFrame(data: unknown): ServerFrame | undefined {
  if (typeof data !== 'string') return undefined
  try {
    const frame = JSON.parse(data) as ServerFrame
    return frame && typeof frame.type === 'string' ? frame : undefined
  } catch {
    return undefined
  }
}

function defaultUrl(): string {
  const location = globalThis.location
  if (!location) throw new Error('LiveConnection needs a url outside a browser page')
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/ws`
}
