/**
 * What went wrong with a conversation request, for a surface to map to its
 * own error (an HTTP status, a JSON-RPC code):
 * - `not-found`: no open or stored session has the id;
 * - `busy`: the session is running, or another process (or surface) holds it;
 * - `invalid`: an argument is wrong (`field` names it);
 * - `unavailable`: the profile lacks the plugin the request needs (`field` names the argument, if one asked for it).
 */
export type ConversationErrorKind = 'not-found' | 'busy' | 'invalid' | 'unavailable'

export class ConversationError extends Error {
  override name = 'ConversationError'
  constructor(
    readonly kind: ConversationErrorKind,
    message: string,
    readonly details: { sessionId?: string; field?: string } = {},
  ) {
    super(message)
  }
}

export const notFound = (id: string, hint = '') =>
  new ConversationError('not-found', `unknown session: ${id}${hint}`, { sessionId: id })

export const busy = (id: string, message: string) => new ConversationError('busy', message, { sessionId: id })

export const invalid = (field: string, message: string) => new ConversationError('invalid', message, { field })

export const unavailable = (what: string, plugin: string, field?: string) =>
  new ConversationError(
    'unavailable',
    `${what} is not available: this profile has no ${plugin} plugin`,
    field ? { field } : {},
  )
