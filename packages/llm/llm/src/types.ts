import type { Branded, JsonValue } from '@dsh/cordis'

export type MessageId = Branded<string, 'MessageId'>
export type ToolCallId = Branded<string, 'ToolCallId'>

/** What a message holds. Tool arguments stay the raw JSON text the model produced. */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'image'; mediaType: string; data: string }
  | { type: 'tool-call'; id: ToolCallId; name: string; arguments: string }
  | { type: 'tool-result'; toolCallId: ToolCallId; content: ContentBlock[]; isError?: boolean }

export type Role = 'system' | 'user' | 'assistant'

/** Where a message came from. `model` carries the route and model that produced an assistant message. */
export type MessageSource =
  | { kind: 'user' }
  | { kind: 'system' }
  | { kind: 'model'; provider: string; model: string }
  | { kind: 'tool'; name: string }
  | { kind: 'plugin'; plugin: string; form?: 'instructions' | 'context' | 'summary' | 'notice' }

export interface Message {
  id: MessageId
  role: Role
  content: ContentBlock[]
  source: MessageSource
}

export interface TokenUsage {
  /** Prompt tokens that missed the provider's cache. */
  inputTokens: number
  outputTokens: number
  /** Prompt tokens served from the provider's cache. */
  cacheReadTokens?: number
  /** Part of outputTokens spent on reasoning. */
  reasoningTokens?: number
}

/** Failure codes shared by every adapter; retry policy and surfaces key on them. */
export type LlmErrorCode =
  | 'MISSING_CREDENTIAL'
  | 'INVALID_CREDENTIAL'
  | 'AUTH'
  | 'QUOTA'
  | 'RATE_LIMIT'
  | 'CONTEXT_WINDOW_EXCEEDED'
  | 'INVALID_REQUEST'
  /** The provider's content filter stopped the reply (a refusal). */
  | 'CONTENT_FILTER'
  | 'SERVER'
  | 'TIMEOUT'
  | 'TRANSPORT'
  | 'EMPTY_RESPONSE'
  | 'PROTOCOL'
  | 'ABORTED'
  | 'UNKNOWN_ROUTE'
  | 'INTERNAL'
  | `HTTP_${number}`

export interface LlmFailure {
  code: LlmErrorCode
  message: string
  status?: number
  /** From a Retry-After header, in milliseconds. */
  retryAfterMs?: number
  requestId?: string
}

export type FinishReason = 'stop' | 'tool-calls' | 'max-tokens' | 'error' | 'aborted'

/**
 * One piece of a streamed reply. `index` numbers the content blocks of the
 * reply in order; deltas with the same index belong to one block. `usage`
 * comes before `finish`, and `finish` is always last.
 */
export type StreamChunk =
  | { type: 'text-delta'; index: number; text: string }
  | { type: 'reasoning-delta'; index: number; text: string }
  | { type: 'tool-call-delta'; index: number; id?: string; name?: string; argumentsDelta: string }
  | { type: 'usage'; usage: TokenUsage }
  | { type: 'finish'; reason: FinishReason; failure?: LlmFailure }

/** What the model is told about a tool. `parameters` is a JSON Schema object. */
export interface ToolSchema {
  name: string
  description: string
  parameters: Record<string, JsonValue>
}

/** The reasoning efforts a request may ask for; every route maps them to its own wire values. */
export const REASONING_EFFORTS = ['off', 'low', 'high', 'max'] as const
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number]

export type RequestPurpose = 'agent' | 'title' | 'compaction'

export interface GenerateRequest {
  /** The route: which registered adapter serves the call (e.g. `deepseek`). */
  provider: string
  model: string
  /** Full history, system message first when there is one. */
  messages: readonly Message[]
  tools?: readonly ToolSchema[]
  reasoningEffort?: ReasoningEffort
  maxTokens?: number
  temperature?: number
  sessionId?: string
  purpose?: RequestPurpose
  signal?: AbortSignal
}

export interface ModelInfo {
  id: string
  contextWindow: number
  maxOutputTokens?: number
  images?: boolean
}

/** Retry behaviour an adapter asks for; the retry plugin applies it. */
export interface RetryPolicy {
  maxRetries: number
  initialDelayMs: number
  maxDelayMs: number
  jitterRatio: number
  retryableCodes: readonly LlmErrorCode[]
}

/**
 * Speaks one provider's wire format. `stream` is a single attempt: no
 * retries inside. It may throw or end with `finish{error}`; the runtime turns
 * a throw into the latter.
 */
export abstract class LlmAdapter {
  abstract stream(request: GenerateRequest): AsyncIterable<StreamChunk>

  models(): ModelInfo[] {
    return []
  }

  retryPolicy(): RetryPolicy | undefined {
    return undefined
  }
}
