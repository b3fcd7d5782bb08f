import type { Context } from '@dsh/cordis'
import { Conversations } from './service.ts'

export { ConversationError, type ConversationErrorKind } from './errors.ts'
export type { ConversationSummary, ListPage, ListQuery } from './listing.ts'
export {
  type CompactOutcome,
  Conversations,
  type CreateOptions,
  type ModelSummary,
  SETTINGS_EVENT,
  type SessionSettings,
  type SessionView,
} from './service.ts'

export const name = 'conversations'
export const inject = ['agents', 'sessions']

/** Provides `ctx.conversations`. */
export function apply(ctx: Context) {
  ctx.plugin(Conversations)
}
