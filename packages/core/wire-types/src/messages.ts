import type { Branded, JsonValue } from './json.ts'

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

/**
 * Where a message came from. `model` carries the route and model that produced an assistant message;
 * `user` carries the `/name args` the user typed when the text is a command's expanded prompt.
 */
export type MessageSource =
  | { kind: 'user'; command?: { name: string; args: string } }
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

/** Failure codes shared by every model adapter; retry policy and surfaces key on them. */
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
  /** A plugin refused the user's message before it was sent (a UserPromptSubmit hook); the message says why. */
  | 'BLOCKED'
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

/** What the model is told about a tool. `parameters` is a JSON Schema object. */
export interface ToolSchema {
  name: string
  description: string
  parameters: Record<string, JsonValue>
}

export type ReasoningEffort = 'off' | 'low' | 'high' | 'max'
