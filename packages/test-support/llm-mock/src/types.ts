import type { IncomingHttpHeaders } from 'node:http'

/** One request the mock received, as the client sent it. */
export interface RecordedRequest {
  /** 1-based position among all requests this server received. */
  seq: number
  method: string
  /** The request path without the query string, e.g. `/chat/completions`. */
  path: string
  /** Lower-cased header names, as Node parses them. */
  headers: IncomingHttpHeaders
  /** The parsed JSON body; `undefined` when the body was empty or not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read request bodies of any provider's shape
  body: any
  /** The body as received. */
  rawBody: string
  /** What the mock answered: the reply kind, `unscripted` when the script ran out, or `not-found`. */
  answer: MockReply['kind'] | 'unscripted' | 'not-found' | 'bad-request' | 'unknown-field'
}

/** A tool call the model "makes". Object arguments are sent as their JSON text. */
export interface ToolCallSpec {
  name: string
  arguments: string | Record<string, unknown>
  /** Defaults to `call_<n>_<random>`. */
  id?: string
}

/**
 * Usage as DeepSeek reports it. Fields left out are derived: prompt tokens
 * from the request body size, completion tokens from the reply size.
 */
export interface UsageSpec {
  promptCacheHitTokens?: number
  promptCacheMissTokens?: number
  completionTokens?: number
  reasoningTokens?: number
}

/** Knobs shared by every streamed reply. */
export interface StreamOptions {
  /** Milliseconds between two SSE events. Default 0. */
  delayMs?: number
  /** Send `: keep-alive` comment lines before the first event and every few events. Default true. */
  keepAlive?: boolean
  /** Extra response headers. */
  headers?: Record<string, string>
}

/** A streamed completion described at a high level; the mock cuts it into realistic chunks. */
export interface CompletionReply extends StreamOptions {
  kind: 'completion'
  reasoning?: string
  content?: string
  toolCalls?: ToolCallSpec[]
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string
  /** `null` sends no usage chunk at all. */
  usage?: UsageSpec | null
  /** Put the usage on the finish chunk instead of a trailing chunk with empty choices. Default false. */
  usageOnFinishChunk?: boolean
  /** Characters per text or reasoning delta, at most. Default: one word per delta. */
  chunkSize?: number
  /** Argument fragments per tool call (after the fragment carrying id and name). Default 3. */
  argumentFragments?: number
  /** The `model` field of the chunks. Default: the request's model. */
  model?: string
}

/** An HTTP error with a JSON (or text) body. */
export interface ErrorReply {
  kind: 'error'
  status: number
  /** The response body; an object is sent as JSON, a string as is. Default: a DeepSeek-style `{error: {...}}`. */
  body: unknown
  /** Sent as the `Retry-After` header (seconds, or an HTTP date string). */
  retryAfter?: number | string
  headers?: Record<string, string>
}

/** The completion's events, but the socket is destroyed after `after` data events. */
export interface CutReply extends StreamOptions {
  kind: 'cut'
  after: number
  reply: CompletionReply
}

/** The completion's first `after` data events, then silence until the client goes away. */
export interface StallReply extends StreamOptions {
  kind: 'stall'
  after: number
  reply: CompletionReply
}

/**
 * Raw SSE lines, written as given (each followed by a newline) with a blank
 * line after every `data:` line. For odd cases: malformed JSON, no `[DONE]`.
 */
export interface RawReply extends StreamOptions {
  kind: 'raw'
  lines: string[]
  /** Default 200. */
  status?: number
  /** How the response ends: `end` (clean, default), `destroy` (socket destroyed), `stall` (never). */
  end?: 'end' | 'destroy' | 'stall'
  /** Unlike the other replies, raw replies add no keep-alive lines unless this is true. */
  keepAlive?: boolean
}

/** A plain JSON answer (a search API, a non-streamed Messages reply, a `/models` listing). */
export interface JsonReply {
  kind: 'json'
  body: unknown
  /** Default 200. */
  status?: number
  headers?: Record<string, string>
  /** Wait this long before answering; the answer is dropped when the client goes away first. */
  delayMs?: number
}

/** One server-sent event of another provider's wire: an optional `event:` name and a JSON `data:` payload. */
export interface WireEvent {
  event?: string
  data: unknown
}

/** A stream of named SSE events, as Anthropic, Gemini and OpenAI's Responses API send them (no `[DONE]`). */
export interface EventsReply extends StreamOptions {
  kind: 'events'
  events: WireEvent[]
}

export type MockReply = CompletionReply | ErrorReply | CutReply | StallReply | RawReply | JsonReply | EventsReply

/** A queued answer: a reply, or a function that picks one from the request. */
export type MockScript = MockReply | ((request: RecordedRequest) => MockReply | Promise<MockReply>)
