import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { EventFeed, type SessionAccess } from '@dsh/conversations'
import type { Context } from '@dsh/cordis'
import type { SessionEvent } from '@dsh/session'
import { errorMessage, withPresentation } from '@dsh/tools'
import { type WebSocket, WebSocketServer } from 'ws'
import { z } from 'zod'
import { schemas } from '@dsh/sdk-protocol'
import { HttpError, parseJson, parseWith } from '@dsh/local-http'
import { httpError } from './requests.ts'

/** A frame the server sends (see API.md). */
export type ServerFrame = { type: string; sessionId?: string } & Record<string, unknown>

interface Client {
  socket: WebSocket
  subscriptions: Map<string, EventFeed>
}

const { sessionId } = schemas

const ClientFrame = z.discriminatedUnion('type', [
  z.object({ type: z.literal('subscribe'), sessionId, afterSeq: z.number().int().min(-1).optional() }),
  z.object({ type: z.literal('unsubscribe'), sessionId }),
  z.object({ type: z.literal('ping') }),
])

/**
 * The WebSocket side of the API: subscriptions per client and session, the
 * replay-then-live handoff, and fan-out of events, deltas, status and
 * approval frames.
 */
export class SocketHub {
  private readonly wss: WebSocketServer
  private readonly clients = new Set<Client>()
  /** Pending approvals and questions of a session, re-sent when a client subscribes to it. */
  pendingFrames: (sessionId: string) => ServerFrame[] = () => []
  /** Told when a session gains its first watching client, and when it loses its last. */
  watchers: { watched(sessionId: string): void; unwatched(sessionId: string): void } = {
    watched: () => {},
    unwatched: () => {},
  }

  constructor(
    private readonly ctx: Context,
    private readonly sessions: SessionAccess,
    maxFrameBytes: number,
  ) {
    // A bigger frame closes the socket with 1009 (message too big).
    this.wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: maxFrameBytes })
  }

  accept(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const client: Client = { socket: ws, subscriptions: new Map() }
      this.clients.add(client)
      ws.on('message', (data, isBinary) => void this.receive(client, data as Buffer, isBinary))
      ws.on('close', () => {
        this.clients.delete(client)
        for (const sessionId of client.subscriptions.keys())
          if (!this.isWatched(sessionId)) this.watchers.unwatched(sessionId)
      })
      ws.on('error', () => ws.terminate())
    })
  }

  close(): void {
    for (const client of this.clients) client.socket.terminate()
    this.clients.clear()
    this.wss.close()
  }

  private send(client: Client, frame: ServerFrame): void {
    if (client.socket.readyState === client.socket.OPEN) client.socket.send(JSON.stringify(frame))
  }

  broadcast(frame: ServerFrame): void {
    for (const client of this.clients) this.send(client, frame)
  }

  /** Sends to the clients subscribed to `sessionId` (or, with `related`, to any session it says yes to). */
  toSubscribers(sessionId: string, frame: ServerFrame, related?: (subscribed: string) => boolean): void {
    for (const client of this.clients) {
      for (const [id, sub] of client.subscriptions) {
        if (sub.live && (id === sessionId || related?.(id))) {
          this.send(client, frame)
          break
        }
      }
    }
  }

  /** A durable event was appended: forward it to subscribers (each feed fills its own gaps). */
  onEvent(sessionId: string, event: SessionEvent): void {
    for (const client of this.clients) client.subscriptions.get(sessionId)?.push(event)
    if (event.type === 'turn/end') {
      const session = this.ctx.sessions.get(sessionId)
      if (session) this.toSubscribers(sessionId, this.usageFrame(sessionId, this.ctx.sessions.publishedEvents(session)))
    }
  }

  /** The session's tokens, cost per turn and in all, and context use, as the service meters them. */
  private usageFrame(sessionId: string, events: readonly SessionEvent[]): ServerFrame {
    return { type: 'usage', sessionId, report: this.ctx.conversations.meter(events) }
  }

  private async receive(client: Client, data: Buffer, isBinary: boolean): Promise<void> {
    const fail = (code: string, message: string, sessionId?: string) =>
      this.send(client, { type: 'error', ...(sessionId ? { sessionId } : {}), error: { code, message } })
    if (isBinary) return fail('bad-request', 'frames must be JSON text, not binary')
    let sessionId: string | undefined
    try {
      const text = data.toString('utf8')
      const frame = parseWith(ClientFrame, parseJson(text, 'the frame'), 'frame (types: subscribe, unsubscribe, ping)')
      if (frame.type === 'ping') return this.send(client, { type: 'pong' })
      sessionId = frame.sessionId
      if (frame.type === 'unsubscribe') {
        if (client.subscriptions.delete(frame.sessionId) && !this.isWatched(frame.sessionId))
          this.watchers.unwatched(frame.sessionId)
        return
      }
      await this.subscribe(client, frame.sessionId, frame.afterSeq ?? -1)
    } catch (thrown) {
      const error = httpError(thrown)
      if (error instanceof HttpError) return fail(error.code, error.message, sessionId)
      this.ctx.logger('web-api').error('subscribing to %s failed: %s', sessionId, error)
      fail('internal', `subscribing to ${sessionId} failed: ${errorMessage(error)}`, sessionId)
    }
  }

  /** Whether any client is subscribed to the session. */
  isWatched(sessionId: string): boolean {
    for (const client of this.clients) if (client.subscriptions.has(sessionId)) return true
    return false
  }

  /** Replays the events after `afterSeq`, then goes live (`EventFeed`); then the state frames. */
  private async subscribe(client: Client, sessionId: string, afterSeq: number): Promise<void> {
    const feed = new EventFeed(this.ctx, sessionId, afterSeq, (event, cwd) =>
      this.send(client, { type: 'event', sessionId, event: withPresentation(this.ctx.get('tools'), event, cwd) }),
    )
    client.subscriptions.set(sessionId, feed)
    this.watchers.watched(sessionId)
    const read = await feed
      .start(this.sessions, () => client.subscriptions.get(sessionId) === feed)
      .catch((error) => {
        if (client.subscriptions.get(sessionId) === feed) client.subscriptions.delete(sessionId)
        throw error
      })
    if (!read) return // unsubscribed or subscribed again meanwhile
    const running = this.sessions.live(sessionId)?.status === 'running'
    this.send(client, { type: 'subscribed', sessionId, lastSeq: read.events.at(-1)?.seq ?? -1, running })
    this.send(client, this.usageFrame(sessionId, read.events))
    for (const frame of this.pendingFrames(sessionId)) this.send(client, frame)
  }
}
