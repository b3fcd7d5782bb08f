import { addUsage, type ModelInfo, type ModelPrice, noUsage, type TokenUsage } from '@dsh/llm'
import type { SessionEvent } from '@dsh/session'
import type { TurnUsage, UsageReport } from '@dsh/wire-types'
import { eventUsage } from './usage.ts'

/** What the meter needs to know of a model: the route's catalog entry, or nothing. */
export type ModelLookup = (provider: string, model: string) => Pick<ModelInfo, 'contextWindow' | 'price'> | undefined

/** USD for `usage` at `price` (per million tokens); reasoning is part of the output. */
export function costOf(usage: TokenUsage, price: ModelPrice): number {
  const millionths =
    usage.inputTokens * price.input + (usage.cacheReadTokens ?? 0) * price.cacheRead + usage.outputTokens * price.output
  return millionths / 1_000_000
}

/**
 * Tokens, cost and context use of `events` (a whole log or a stretch of it).
 * A reply is priced at the model that wrote it, a failed attempt at the model
 * of the latest request header; prices and context windows come from
 * `lookup` (today's catalog), a context window also from `request/context`.
 */
export function meterUsage(events: readonly SessionEvent[], lookup: ModelLookup): UsageReport {
  const report: UsageReport = { usage: noUsage(), turns: [] }
  const unpriced = new Set<string>()
  let requested: { provider: string; model: string } | undefined
  let window: number | undefined
  let lastReply: TokenUsage | undefined
  const starts = new Map<number, number>()
  let current: TurnUsage | undefined
  const turnOf = (turn: number, time: number): TurnUsage => {
    if (current?.turn !== turn) {
      current = { turn, usage: noUsage(), steps: 0 }
      starts.set(turn, time)
      report.turns.push(current)
    }
    return current
  }
  for (const event of events) {
    if (event.type === 'request/header') {
      const { provider, model } = (event as SessionEvent<'request/header'>).data
      requested = { provider, model }
      window = lookup(provider, model)?.contextWindow ?? window
    } else if (event.type === 'request/context') {
      window = (event as SessionEvent<'request/context'>).data.contextWindow ?? window
    } else if (event.type === 'turn/start') {
      turnOf((event as SessionEvent<'turn/start'>).data.turn, event.time)
    } else if (event.type === 'step/start') {
      turnOf((event as SessionEvent<'step/start'>).data.turn, event.time).steps++
    } else if (event.type === 'turn/end') {
      const turn = turnOf((event as SessionEvent<'turn/end'>).data.turn, event.time)
      turn.durationMs = event.time - (starts.get(turn.turn) ?? event.time)
    }
    const usage = eventUsage(event)
    if (!usage) continue
    const { turn } = (event as SessionEvent<'assistant/message' | 'assistant/attempt'>).data
    const source =
      event.type === 'assistant/message' ? (event as SessionEvent<'assistant/message'>).data.message.source : undefined
    const provider = source?.kind === 'model' ? source.provider : (requested?.provider ?? '')
    const model = source?.kind === 'model' ? source.model : requested?.model
    const entry = turnOf(turn, event.time)
    addUsage(report.usage, usage)
    addUsage(entry.usage, usage)
    if (model) entry.model = model
    const price = model ? lookup(provider, model)?.price : undefined
    if (price) {
      const cost = costOf(usage, price)
      report.costUsd = (report.costUsd ?? 0) + cost
      entry.costUsd = (entry.costUsd ?? 0) + cost
    } else if (model) unpriced.add(model)
    if (event.type === 'assistant/message') lastReply = usage
  }
  if (unpriced.size > 0) report.unpriced = [...unpriced]
  if (lastReply && window) {
    const tokens = lastReply.inputTokens + (lastReply.cacheReadTokens ?? 0) + lastReply.outputTokens
    report.context = { tokens, window, percent: Math.round((tokens / window) * 1000) / 10 }
  }
  return report
}
