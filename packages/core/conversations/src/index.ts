import type { Context } from '@dsh/cordis'
import type {} from '@dsh/questions'
import type {} from '@dsh/tools'
import { Conversations } from './service.ts'

export { type LogView, SessionAccess, within } from './access.ts'
export { sessionActivity } from './activity.ts'
export { type ApprovalPrompt, type ApprovalReply, type Approver, InteractionBroker } from './broker.ts'
export {
  ConversationError,
  type ConversationErrorKind,
  type RpcErrorCodes,
  type RpcErrorShape,
  rpcErrorOf,
} from './errors.ts'
export { recentHistory } from './history.ts'
export { IdleUnloader } from './idle.ts'
export type { ConversationSummary, ListPage, ListQuery } from './listing.ts'
export { PendingInteractions, type PendingNotice, PendingRequests } from './pending.ts'
export { EventFeed } from './feed.ts'
export { type PromptOutcome, type PromptStop, promptOutcome } from './outcome.ts'
export { RecentReads } from './recent-reads.ts'
export {
  type CommandReply,
  checkedPrompt,
  type PromptBlock,
  type PromptInput,
  promptBytes,
  promptText,
  runCommand,
  userMessage,
} from './prompts.ts'
export {
  type OptionChoice,
  optionSettings,
  PLAN_MODE,
  type SessionOption,
  type SessionOptionId,
  sessionOptions,
} from './options.ts'
export {
  type CompactOutcome,
  Conversations,
  type CreateOptions,
  type LogReader,
  type PromptOptions,
  type ModelSummary,
  SETTINGS_EVENT,
  type SessionSettings,
  type SessionView,
} from './service.ts'

export const name = 'conversations'
export const inject = ['agents', 'sessions']

/**
 * Provides `ctx.conversations`, and makes its broker the one that tool
 * approvals and user questions go to (child plugins, so the hold comes back
 * when `ctx.tools` or `ctx.questions` restart).
 */
export function apply(ctx: Context) {
  ctx.plugin(Conversations)
  ctx.plugin({
    name: 'conversations-approvals',
    inject: ['conversations', 'tools'],
    apply: (inner: Context) => void inner.tools.setBroker(inner, inner.conversations.broker),
  })
  ctx.plugin({
    name: 'conversations-questions',
    inject: ['conversations', 'questions'],
    apply(inner: Context) {
      const { broker } = inner.conversations
      inner.questions.setAsker(inner, (request, signal) => broker.ask(request, signal))
    },
  })
}
