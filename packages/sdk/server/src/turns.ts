import { summarizeTurns } from '@dsh/agent'
import type { PromptResult, StopReason, UsageReport } from '@dsh/sdk-protocol'
import type { SessionEvent, TurnEndReason } from '@dsh/session'

const STOP_REASONS: Record<TurnEndReason, StopReason> = {
  completed: 'completed',
  'max-tokens': 'max-tokens',
  error: 'error',
  aborted: 'cancelled',
  interrupted: 'cancelled',
}

/**
 * What a prompt's turn came to, from the events it logged and their metered
 * usage: how it ended, the last non-empty reply text, the tokens of every
 * model call, cost, duration, steps and context use.
 */
export function turnResult(events: readonly SessionEvent[], meter: UsageReport): PromptResult {
  const { end, text } = summarizeTurns(events)
  // No turn/end: the message never started a turn (the agent was stopped first).
  const result: PromptResult = {
    stopReason: end ? STOP_REASONS[end.data.reason] : 'cancelled',
    text,
    usage: meter.usage,
    steps: meter.turns.reduce((sum, turn) => sum + turn.steps, 0),
  }
  if (meter.costUsd !== undefined) result.costUsd = meter.costUsd
  const durations = meter.turns.flatMap((turn) => (turn.durationMs === undefined ? [] : [turn.durationMs]))
  if (durations.length > 0) result.durationMs = durations.reduce((a, b) => a + b, 0)
  if (meter.context) result.context = meter.context
  if (end) result.turn = end.data.turn
  if (end?.data.error) result.error = { code: end.data.error.code, message: end.data.error.message }
  return result
}
