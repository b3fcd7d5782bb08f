import { randomUUID } from 'node:crypto'
import type { Context } from '@dsh/cordis'
import type { QuestionAnswer } from '@dsh/questions'
import { within } from './access.ts'
import type { ApprovalReply } from './broker.ts'

/** How a pending request, or its withdrawal (`<kind>-resolved`), is announced to the user's surface. */
export type PendingNotice = { type: string; requestId: string; sessionId: string } & Record<string, unknown>

interface Entry<A> {
  frame: PendingNotice
  resolve(answer: A): void
  reject(error: unknown): void
}

/**
 * Requests waiting for the user (approvals or questions) on a surface that
 * asks asynchronously (the broker's approver or asker awaits `ask`): each is announced
 * with a notice, answered once (the first answer wins), and withdrawn when
 * its call is cancelled.
 */
export class PendingRequests<A> {
  private readonly entries = new Map<string, Entry<A>>()

  constructor(
    private readonly kind: 'approval' | 'question',
    private readonly announce: (notice: PendingNotice) => void,
  ) {}

  ask(sessionId: string, fields: Record<string, unknown>, signal: AbortSignal): Promise<A> {
    signal.throwIfAborted()
    const requestId = `${this.kind}-${randomUUID()}`
    return new Promise<A>((resolve, reject) => {
      const onAbort = () => {
        if (this.settle(requestId)) reject(signal.reason)
      }
      const frame = { type: this.kind, requestId, sessionId, ...fields }
      this.entries.set(requestId, {
        frame,
        resolve: (answer) => {
          signal.removeEventListener('abort', onAbort)
          resolve(answer)
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort)
          reject(error)
        },
      })
      signal.addEventListener('abort', onAbort, { once: true })
      this.announce(frame)
    })
  }

  /** Removes a request and announces that it is resolved; false when it was not pending. */
  private settle(requestId: string): Entry<A> | undefined {
    const entry = this.entries.get(requestId)
    if (!entry) return undefined
    this.entries.delete(requestId)
    this.announce({ type: `${this.kind}-resolved`, requestId, sessionId: entry.frame.sessionId })
    return entry
  }

  /** Answers a pending request; false when it is not pending (answered elsewhere, or cancelled). */
  answer(requestId: string, answer: A): boolean {
    const entry = this.settle(requestId)
    entry?.resolve(answer)
    return entry !== undefined
  }

  get(requestId: string): PendingNotice | undefined {
    return this.entries.get(requestId)?.frame
  }

  frames(matches: (sessionId: string) => boolean): PendingNotice[] {
    return [...this.entries.values()].filter((e) => matches(e.frame.sessionId)).map((e) => e.frame)
  }

  /** Fails every pending request (the API is going away). */
  rejectAll(reason: string): void {
    for (const requestId of [...this.entries.keys()]) this.settle(requestId)?.reject(new Error(reason))
  }
}

/**
 * Everything a surface that answers asynchronously (a later request carries
 * the answer) has open: it becomes the broker's approver and asker for
 * `ctx`'s plugin, announces each approval (`toolCall` with how its tool
 * presents it, `reason`, `preset`) and question (`callId`, `questions`) to
 * the watchers of the session or an ancestor, and rejects what is still open
 * when the plugin goes.
 */
export class PendingInteractions {
  readonly approvals: PendingRequests<ApprovalReply>
  readonly questions: PendingRequests<QuestionAnswer[]>

  constructor(
    private readonly ctx: Context,
    announce: (notice: PendingNotice) => void,
    /** Why what is still open fails when the plugin goes ("the web API stopped"). */
    stopped: string,
  ) {
    this.approvals = new PendingRequests('approval', announce)
    this.questions = new PendingRequests('question', announce)
    ctx.effect(
      () => () => {
        this.approvals.rejectAll(stopped)
        this.questions.rejectAll(stopped)
      },
      'pending approvals and questions',
    )
    const { broker } = ctx.conversations
    broker.setApprover(ctx, ({ sessionId, cwd, call, reason, preset }, signal) => {
      const tools = ctx.get('tools')
      const presentation = tools ? { presentation: tools.present(call, cwd) } : {}
      const toolCall = { callId: call.callId, name: call.name, arguments: call.arguments, ...presentation }
      return this.approvals.ask(sessionId, { toolCall, reason, ...(preset ? { preset } : {}) }, signal)
    })
    broker.setAsker(ctx, (request, signal) =>
      this.questions.ask(request.sessionId, { callId: request.callId, questions: request.questions }, signal),
    )
  }

  /** The open requests a watcher of `sessionId` sees: its own and its subagents'. */
  openFor(sessionId: string): PendingNotice[] {
    const matches = (asking: string) => within(this.ctx, asking, sessionId)
    return [...this.approvals.frames(matches), ...this.questions.frames(matches)]
  }
}
