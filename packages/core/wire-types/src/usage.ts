import type { TokenUsage } from './messages.ts'

/** What a model costs, in US dollars per million tokens. */
export interface ModelPrice {
  /** Prompt tokens that missed the provider's cache. */
  input: number
  /** Prompt tokens served from the provider's cache. */
  cacheRead: number
  output: number
}

/** Tokens, cost and length of one turn. */
export interface TurnUsage {
  turn: number
  /** The model of the turn's last request. */
  model?: string
  usage: Required<TokenUsage>
  /** Absent when no model call of the turn had a price. */
  costUsd?: number
  /** From `turn/start` to `turn/end`; absent for a turn that has not ended. */
  durationMs?: number
  /** Model requests the turn made. */
  steps: number
}

/** How full the model's context window was after the last reply. */
export interface ContextUse {
  /** Prompt and reply tokens of the last reply: what the next request starts from. */
  tokens: number
  window: number
  /** `tokens / window` in percent, rounded to one decimal. */
  percent: number
}

/** The usage of a session, or of a stretch of it (a headless run, an SDK turn). */
export interface UsageReport {
  usage: Required<TokenUsage>
  /** Absent when no model call had a price. */
  costUsd?: number
  /** Models that were called but have no price: their tokens are not in `costUsd`. */
  unpriced?: string[]
  turns: TurnUsage[]
  context?: ContextUse
}
