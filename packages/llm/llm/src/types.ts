import type {
  FinishReason,
  LlmErrorCode,
  LlmFailure,
  Message,
  ModelPrice,
  ReasoningEffort,
  TokenUsage,
  ToolSchema,
} from '@dsh/wire-types'

export type {
  ContentBlock,
  FinishReason,
  LlmErrorCode,
  LlmFailure,
  Message,
  MessageId,
  MessageSource,
  ModelPrice,
  ReasoningEffort,
  Role,
  TokenUsage,
  ToolCallId,
  ToolSchema,
} from '@dsh/wire-types'

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

/** The reasoning efforts a request may ask for (the type is the wire's); every route maps them to its own wire values. */
export const REASONING_EFFORTS = ['off', 'low', 'high', 'max'] as const satisfies readonly ReasoningEffort[]

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
  /** What the model costs; unknown when absent. */
  price?: ModelPrice
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

  /**
   * The models the server offers, asked of it where it has a listing
   * (`GET /models`); the known catalog otherwise. May reject with a
   * message for users (unreachable server, refused key).
   */
  async discoverModels(_signal?: AbortSignal): Promise<ModelInfo[]> {
    return this.models()
  }

  retryPolicy(): RetryPolicy | undefined {
    return undefined
  }
}
