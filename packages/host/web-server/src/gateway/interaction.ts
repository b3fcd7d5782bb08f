import type { Context } from '@dsh/cordis'
import { PendingInteractions, within } from '@dsh/conversations'
import { z } from 'zod'
import { HttpError, parseWith } from '@dsh/local-http'
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
  const pending = new PendingInteractions(
    ctx,
    (notice) => hub.toSubscribers(notice.sessionId, notice, (subscribed) => within(ctx, notice.sessionId, subscribed)),
    'the web API stopped',
  )
  const { approvals, questions } = pending
  hub.pendingFrames = (subscribed) => pending.openFor(subscribed)

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
