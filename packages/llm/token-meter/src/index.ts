import { type Context, Service } from '@dsh/cordis'
import { addUsage, noUsage, type TokenUsage } from '@dsh/llm'
import type { Session, SessionEvent } from '@dsh/session'

declare module '@dsh/cordis' {
  interface Context {
    tokenMeter: TokenMeter
  }
}

export interface UsageTotals {
  inputTokens: number
  outputTokens: number
  cacheReadTokens: number
  reasoningTokens: number
  requests: number
}

/** The usage an event reports: replies and failed attempts carry it, other events do not. */
export function eventUsage(event: SessionEvent): TokenUsage | undefined {
  if (event.type === 'assistant/message') return (event as SessionEvent<'assistant/message'>).data.usage
  if (event.type === 'assistant/attempt') return (event as SessionEvent<'assistant/attempt'>).data.usage
  return undefined
}

function add(totals: UsageTotals, usage: TokenUsage | undefined): void {
  if (!usage) return
  addUsage(totals, usage)
  totals.requests += 1
}

/**
 * `ctx.tokenMeter`: token accounting read from the session log (replies and
 * failed attempts both carry usage), and the context size of the last request.
 */
export class TokenMeter extends Service {
  constructor(ctx: Context) {
    super(ctx, 'tokenMeter')
  }

  /** Usage summed over the whole log, or over the events from `fromSeq` on. */
  totals(session: Session, fromSeq = 0): UsageTotals {
    const totals: UsageTotals = { ...noUsage(), requests: 0 }
    for (const event of session.events) {
      if (event.seq >= fromSeq) add(totals, eventUsage(event))
    }
    return totals
  }

  /** Prompt plus reply tokens of the latest reply: how full the context window is now. */
  contextTokens(session: Session): number | undefined {
    const last = session.last('assistant/message')
    const usage = last?.data.usage
    if (!usage) return undefined
    return usage.inputTokens + (usage.cacheReadTokens ?? 0) + usage.outputTokens
  }
}

export const name = 'token-meter'

/** Provides `ctx.tokenMeter`. */
export function apply(ctx: Context) {
  ctx.plugin(TokenMeter)
}
