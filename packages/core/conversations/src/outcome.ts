import { summarizeTurns } from '@dsh/agent'
import type { SessionEvent, TurnEndReason } from '@dsh/session'
import type { ContextUse, LlmFailure, UsageReport } from '@dsh/wire-types'

/** How a prompt ended, in the words of the SDK protocol; other surfaces map these to theirs. */
export type PromptStop = 'completed' | 'cancelled' | 'error' | 'max-tokens'

/** What a prompt's turn came to (the SDK's `session/prompt` result). */
export interface PromptOutcome {
  stopReason: PromptStop
  /** The last non-empty reply text. */
  text: string
  usage: UsageReport['usage']
  costUsd?: number
  durationMs?: number
  /** Model requests the turn made. */
  steps: number
  context?: ContextUse
  turn?: number
  /** Why a turn ended in `error`: the model failure as logged (code, message, and status or request id when known). */
  error?: LlmFailure
}

const STOPS: Record<TurnEndReason, PromptStop> = {
  completed: 'completed',
  'max-tokens': 'max-tokens',
  error: 'error',
  aborted: 'cancelled',
  interrupted: 'cancelled',
}

/**
 * What a prompt's turn came to, from the events it logged and their metered
 * usage (`conversations.meter(events)`): how it ended, the last non-empty
 * reply text, the tokens of every model call, cost, duration, steps and
 * context use.
 */
export function promptOutcome(events: readonly SessionEvent[], meter: UsageReport): PromptOutcome {
  const { end, text } = summarizeTurns(events)
  // No turn/end: the message never started a turn (the agent was stopped first).
  const result: PromptOutcome = {
    stopReason: end ? STOPS[end.data.reason] : 'cancelled',
    text,
    usage: meter.usage,
    steps: meter.turns.reduce((sum, turn) => sum + turn.steps, 0),
  }
  if (meter.costUsd !== undefined) result.costUsd = meter.costUsd
  const durations = meter.turns.flatMap((turn) => (turn.durationMs === undefined ? [] : [turn.durationMs]))
  if (durations.length > 0) result.durationMs = durations.reduce((a, b) => a + b, 0)
  if (meter.context) result.context = meter.context
  if (end) result.turn = end.data.turn
  if (end?.data.error) result.error = { ...end.data.error }
  return result
}
