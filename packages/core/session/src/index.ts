export * from './events.ts'
export { Session, type AppendOptions, type TextFilter, type TurnState, isSurfaceEvent, messageOf } from './session.ts'
export { SessionStore, CORE_EVENT_TYPES, SessionFormatError, newSessionId, type CreateSessionOptions } from './store.ts'
export { closersForOpenTurn, type Closer } from './repair.ts'
export { adoptFrozenJson, frozenJsonCopy, type TextMap } from './json.ts'
export { newMessageId, textMessage } from './messages.ts'

import type { Context } from '@dsh/cordis'
import { SessionStore } from './store.ts'

export const name = 'session'

/** Provides `ctx.sessions`. */
export function apply(ctx: Context) {
  ctx.plugin(SessionStore)
}
