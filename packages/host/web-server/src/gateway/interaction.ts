import type { Context } from '@dsh/cordis'
import { type ApprovalReply, PendingRequests, within } from '@dsh/conversations'
import type { QuestionAnswer } from '@dsh/questions'
import { z } from 'zod'
import { HttpError, parseWith } from '../http.ts'
import type { SocketHub } from './hub.ts'
import type { Route } from './requests.ts'

const ApprovalBody = z.object({
  decision: z.enum(['allow-once', 'allow-session', 'reject']),
  message: z.string().max(10_000).optional(),
})

const QuestionBody = z.object({
  answers: z
    .array(z.object({ question: z.string(), selected: z.array(z.string()), text: z.string().max(100_000).optional() }))
    .min(1),
})

/**
 * Tool approvals and user questions for the browser: how the web surface
 * asks its user (registered with the conversation service's broker),
 * the frames they send, and the routes that answer them.
 */
export function applyInteraction(ctx: Context, route: Route, hub: SocketHub): void {
  const announce = (frame: { sessionId: string; type: string }) =>
    hub.toSubscribers(frame.sessionId, frame, (subscribed) => within(ctx, frame.sessionId, subscribed))
  const approvals = new PendingRequests<ApprovalReply>('approval', announce)
  const questions = new PendingRequests<QuestionAnswer[]>('question', announce)
  hub.pendingFrames = (subscribed) => {
    const matches = (sessionId: string) => within(ctx, sessionId, subscribed)
    return [...approvals.frames(matches), ...questions.frames(matches)]
  }
  ctx.effect(
    () => () => {
      approvals.rejectAll('the web API stopped')
      questions.rejectAll('the web API stopped')
    },
    'pending web requests',
  )

  const { broker } = ctx.conversations
  broker.setApprover(ctx, ({ sessionId, cwd, call, reason, preset }, signal) =>
    approvals.ask(
      sessionId,
      {
        toolCall: {
          callId: call.callId,
          name: call.name,
          arguments: call.arguments,
          ...presentationOf(ctx, call, cwd),
        },
        reason,
        ...(preset ? { preset } : {}),
      },
      signal,
    ),
  )
  broker.setAsker(ctx, (request, signal) =>
    questions.ask(request.sessionId, { callId: request.callId, questions: request.questions }, signal),
  )

  route('POST', '/api/approvals/:requestId', async (request) => {
    const body = parseWith(ApprovalBody, await request.body(), 'approval answer')
    const answer = { decision: body.decision, ...(body.message ? { message: body.message } : {}) }
    if (!approvals.answer(request.params.requestId as string, answer))
      throw notPending('approval', request.params.requestId as string)
    return {}
  })
  route('POST', '/api/questions/:requestId', async (request) => {
    const id = request.params.requestId as string
    const body = parseWith(QuestionBody, await request.body(), 'question answers')
    if (!questions.get(id)) throw notPending('question', id)
    questions.answer(
      id,
      body.answers.map((a) => ({
        question: a.question,
        selected: a.selected,
        ...(a.text !== undefined ? { text: a.text } : {}),
      })),
    )
    return {}
  })
}

function notPending(kind: string, id: string): HttpError {
  return new HttpError(
    404,
    'not-found',
    `${kind} ${JSON.stringify(id)} is not pending: it was answered already (maybe in another tab) or its call was cancelled`,
  )
}

/** How the call's tool shows it, for the approval dialog (`presentation`, absent without `ctx.tools`). */
function presentationOf(ctx: Context, call: { name: string; arguments: string }, cwd: string) {
  const tools = ctx.get('tools')
  return tools ? { presentation: tools.present(call, cwd) } : {}
}
