import { type Context, ExclusiveSlot } from '@dsh/cordis'
import type {} from '@dsh/permission'
import { type Asker, NoAskerError, type QuestionAnswer, type QuestionRequest } from '@dsh/questions'
import {
  type ApprovalBroker,
  type ApprovalRequest,
  type ApprovalVerdict,
  type ToolCall,
  untilAborted,
} from '@dsh/tools'
import type { ApprovalDecision, PermissionPreset } from '@dsh/wire-types'

/** A call put to the user for approval, as a surface shows it. */
export interface ApprovalPrompt {
  sessionId: string
  /** The session's workspace. */
  cwd: string
  call: Readonly<ToolCall>
  /** Why it needs approval. */
  reason: string
  /** The session's permission preset (absent without the permission plugin). */
  preset?: PermissionPreset
}

/** The user's answer, mapped by the surface from its own protocol. */
export interface ApprovalReply {
  decision: ApprovalDecision
  /** What the user said with a rejection. */
  message?: string
}

/** How a surface asks its user to approve a call. */
export type Approver = (prompt: ApprovalPrompt, signal: AbortSignal) => Promise<ApprovalReply>

const DECISIONS: readonly string[] = ['allow-once', 'allow-session', 'reject'] satisfies ApprovalDecision[]

/**
 * The one broker for everything a turn asks its user: tool approvals (from
 * the permission plugin, hooks and plan mode, through `ctx.tools.approve`)
 * and questions (`ask_user_question`, through `ctx.questions`). A surface
 * registers how to ask (`setApprover`, `setAsker`) and maps its protocol's
 * answers to `ApprovalReply`; the broker interprets them and keeps the one
 * per-session memory of what the user allowed "for this session" (until the
 * session closes, or its permission preset or network setting changes).
 */
export class InteractionBroker implements ApprovalBroker {
  private readonly approver = new ExclusiveSlot<Approver>('surface approver')
  private readonly asker = new ExclusiveSlot<Asker>('question asker')
  /** Per session: the scopes the user allowed for the rest of the session. */
  private readonly allowed = new Map<string, Set<string>>()

  constructor(private readonly ctx: Context) {
    ctx.on('session/closed', async (session) => void this.allowed.delete(session.id))
  }

  /** Installs the surface's approver, until its plugin is disposed or the disposer is called. A second one throws. */
  setApprover(ctx: Context, approver: Approver): () => void {
    return this.approver.set(ctx, approver)
  }

  /** Installs the surface's question asker, the same way. */
  setAsker(ctx: Context, asker: Asker): () => void {
    return this.asker.set(ctx, asker)
  }

  canAsk(sessionId: string): boolean {
    return this.approver.current !== undefined && !this.isSubagent(sessionId)
  }

  async approve(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalVerdict> {
    const { sessionId, cwd } = request.run
    if (this.isSubagent(sessionId))
      return { allowed: false, answer: 'no-approver', message: 'subagents cannot ask for approval' }
    const remembered = this.allowed.get(sessionId)
    if (remembered?.has(request.scope)) return { allowed: true, answer: 'remembered' }
    const approver = this.approver.current
    if (!approver) return { allowed: false, answer: 'no-approver', message: 'no one is available to approve it here' }
    const preset = this.ctx.get('permission')?.preset(sessionId)
    const prompt: ApprovalPrompt = {
      sessionId,
      cwd,
      call: request.call,
      reason: request.reason,
      ...(preset ? { preset } : {}),
    }
    let reply: ApprovalReply
    try {
      reply = await untilAborted(approver(prompt, signal), signal)
    } catch (error) {
      if (signal.aborted)
        return { allowed: false, answer: 'cancelled', message: 'cancelled while waiting for approval' }
      return { allowed: false, answer: 'failed', message: error instanceof Error ? error.message : String(error) }
    }
    const decision = reply?.decision
    if (!DECISIONS.includes(decision))
      return { allowed: false, answer: 'failed', message: `the approver answered ${JSON.stringify(reply)}` }
    if (decision === 'reject') {
      const message = typeof reply.message === 'string' ? reply.message.trim() : ''
      return { allowed: false, answer: 'reject', ...(message ? { message } : {}) }
    }
    if (decision === 'allow-session') {
      let scopes = this.allowed.get(sessionId)
      if (!scopes) this.allowed.set(sessionId, (scopes = new Set()))
      scopes.add(request.scope)
    }
    return { allowed: true, answer: decision }
  }

  forget(sessionId: string, scopePrefix?: string): void {
    if (scopePrefix === undefined) {
      this.allowed.delete(sessionId)
      return
    }
    const scopes = this.allowed.get(sessionId)
    for (const scope of scopes ?? []) if (scope.startsWith(scopePrefix)) scopes?.delete(scope)
  }

  /** Puts questions to the surface's user; `NoAskerError` when no surface can. */
  ask(request: QuestionRequest, signal: AbortSignal): Promise<QuestionAnswer[]> {
    const asker = this.asker.current
    if (!asker) return Promise.reject(new NoAskerError())
    return asker(request, signal)
  }

  /** A session with a parent (a subagent's) never reaches the user: nobody is watching it. */
  private isSubagent(sessionId: string): boolean {
    return this.ctx.sessions.get(sessionId)?.meta.parentSession !== undefined
  }
}
