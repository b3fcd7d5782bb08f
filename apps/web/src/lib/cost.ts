import type { ModelPrice, TokenUsage } from '@dsh/web-client'

/**
 * USD per million tokens. Built in: DeepSeek's published prices for the
 * models named here (V3.2, from 2025-09-29); the server's `info.prices`, when
 * it sends them, add to and override these. A model with no price shows
 * tokens without a cost.
 */
const PRICES: Record<string, ModelPrice> = {
  'deepseek-chat': { input: 0.28, cacheRead: 0.028, output: 0.42 },
  'deepseek-reasoner': { input: 0.28, cacheRead: 0.028, output: 0.42 },
}

export function addPrices(prices: Record<string, ModelPrice> | undefined): void {
  Object.assign(PRICES, prices)
}

export function costOf(model: string | undefined, usage: TokenUsage): number | undefined {
  const price = model ? PRICES[model] : undefined
  if (!price) return undefined
  return (usage.inputTokens * price.input + (usage.cacheReadTokens ?? 0) * price.cacheRead + usage.outputTokens * price.output) / 1e6
}

export function addUsage(a: TokenUsage, b: TokenUsage | undefined): TokenUsage {
  if (!b) return a
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0),
    reasoningTokens: (a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0),
  }
}

export const NO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, reasoningTokens: 0 }
