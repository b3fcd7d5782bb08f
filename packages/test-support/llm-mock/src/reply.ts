import type {
  CompletionReply,
  CutReply,
  ErrorReply,
  RawReply,
  StallReply,
  StreamOptions,
  ToolCallSpec,
} from './types.ts'

type CompletionOptions = Omit<CompletionReply, 'kind'>

export interface ErrorOptions {
  /** The `error.message` of the default body. */
  message?: string
  /** The `error.type` of the default body. */
  type?: string
  /** The `error.code` of the default body. */
  code?: string | null
  /** Replaces the whole body: an object is sent as JSON, a string as is. */
  body?: unknown
  /** Sent as `Retry-After`: seconds, or an HTTP date string. */
  retryAfter?: number | string
  headers?: Record<string, string>
}

/** What DeepSeek says for the usual statuses: [message, type]. */
const DEFAULT_ERRORS: Record<number, [string, string]> = {
  400: ['Invalid request', 'invalid_request_error'],
  401: ['Authentication Fails, Your api key: ****test is invalid', 'authentication_error'],
  402: ['Insufficient Balance', 'unknown_error'],
  403: ['Permission denied', 'permission_error'],
  413: ['Request body too large', 'invalid_request_error'],
  422: ['Invalid parameters', 'invalid_request_error'],
  429: ['Rate limit reached for requests', 'rate_limit_error'],
  500: ['Internal server error', 'server_error'],
  503: ['Service is too busy, please try again later', 'server_error'],
}

function defaultError(status: number): { message: string; type: string } {
  const [message, type] = DEFAULT_ERRORS[status] ?? [
    `HTTP ${status}`,
    status >= 500 ? 'server_error' : 'invalid_request_error',
  ]
  return { message, type }
}

const DEFAULT_PARTIAL = 'This reply streams a few words and then stops before it can finish.'

/** Builders for scripted replies. */
export const reply = {
  /** A streamed completion with everything spelled out. */
  completion(spec: CompletionOptions = {}): CompletionReply {
    return { ...spec, kind: 'completion' }
  },

  /** A text answer (optionally with `reasoning` first). */
  text(content: string, options: Omit<CompletionOptions, 'content'> = {}): CompletionReply {
    return { ...options, kind: 'completion', content }
  },

  /** Tool calls (optionally after `reasoning` and `content`); finish reason `tool_calls`. */
  toolCalls(calls: ToolCallSpec[], options: Omit<CompletionOptions, 'toolCalls'> = {}): CompletionReply {
    return { ...options, kind: 'completion', toolCalls: calls }
  },

  /** A well-formed stream that carries no content and no tool calls (finish `stop`, usage, `[DONE]`). */
  empty(options: Omit<CompletionOptions, 'content' | 'toolCalls'> = {}): CompletionReply {
    return { ...options, kind: 'completion' }
  },

  /** An HTTP error with a DeepSeek-style `{error: {message, type, code}}` body unless `body` is given. */
  error(status: number, options: ErrorOptions = {}): ErrorReply {
    const base = defaultError(status)
    const body =
      options.body !== undefined
        ? options.body
        : {
            error: {
              message: options.message ?? base.message,
              type: options.type ?? base.type,
              param: null,
              code: options.code ?? null,
            },
          }
    const out: ErrorReply = { kind: 'error', status, body }
    if (options.retryAfter !== undefined) out.retryAfter = options.retryAfter
    if (options.headers) out.headers = options.headers
    return out
  },

  /** Streams `completion`'s first `after` data events, then destroys the socket. */
  cut(after: number, completion: CompletionReply = reply.text(DEFAULT_PARTIAL), options: StreamOptions = {}): CutReply {
    return { ...options, kind: 'cut', after, reply: completion }
  },

  /** Streams `completion`'s first `after` data events, then goes silent until the client gives up. */
  stall(after = 1, completion: CompletionReply = reply.text(DEFAULT_PARTIAL), options: StreamOptions = {}): StallReply {
    return { ...options, kind: 'stall', after, reply: completion }
  },

  /** Raw SSE lines, e.g. `['data: {not json', 'data: [DONE]']`. */
  raw(lines: string[], options: Omit<RawReply, 'kind' | 'lines'> = {}): RawReply {
    return { ...options, kind: 'raw', lines }
  },
}
