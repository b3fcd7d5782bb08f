import { assertNever } from '@dsh/cordis'

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

/** The JSON-RPC codes a protocol gives the two session errors; bad and unavailable arguments are -32602 everywhere. */
export interface RpcErrorCodes {
  notFound: number
  busy: number
}

/** A JSON-RPC error object, for the surface to throw as its library's error class. */
export interface RpcErrorShape {
  code: number
  message: string
  data?: { sessionId?: string; field?: string; issues?: Array<{ field: string; message: string }> }
}

/**
 * The one table from a conversation error to a JSON-RPC error: `not-found`
 * and `busy` get the protocol's `codes` with the session id as data, a bad or
 * unavailable argument is -32602 naming the field (`rename` gives the
 * surface's name of a service argument). `prefix` starts the message (the
 * SDK names the method there).
 */
export function rpcErrorOf(
  error: ConversationError,
  codes: RpcErrorCodes,
  { prefix = '', rename = {} }: { prefix?: string; rename?: Readonly<Record<string, string>> } = {},
): RpcErrorShape {
  const { sessionId, field } = error.details
  switch (error.kind) {
    case 'not-found':
      return { code: codes.notFound, message: error.message, data: { sessionId } }
    case 'busy':
      return { code: codes.busy, message: error.message, data: { sessionId } }
    case 'invalid':
    case 'unavailable': {
      if (!field) return { code: -32602, message: `${prefix}${error.message}` }
      const named = rename[field] ?? field
      const issues = [{ field: named, message: error.message }]
      return { code: -32602, message: `${prefix}${named}: ${error.message}`, data: { field: named, issues } }
    }
    default:
      return assertNever(error.kind, 'conversation error kind')
  }
}
