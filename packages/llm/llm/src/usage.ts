import type { TokenUsage } from './types.ts'

/** A running total with nothing counted yet, for `addUsage`. */
export function noUsage(): Required<TokenUsage> {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, reasoningTokens: 0 }
}

/** Adds `usage` to the running `total` in place; a figure the provider did not report counts as 0. */
export function addUsage(total: Required<TokenUsage>, usage: TokenUsage): void {
  total.inputTokens += usage.inputTokens
  total.outputTokens += usage.outputTokens
  total.cacheReadTokens += usage.cacheReadTokens ?? 0
  total.reasoningTokens += usage.reasoningTokens ?? 0
}
