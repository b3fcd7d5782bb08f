import { summarizeTurns } from '@dsh/agent'
import type { Message } from '@dsh/llm'
import type { PromptContent as Content, PromptResult, StopReason } from '@dsh/sdk-protocol'
import { newMessageId, type SessionEvent, type TurnEndReason } from '@dsh/session'
import type { UsageReport } from '@dsh/sdk-protocol'

/** The prompt as the content blocks of one user message. */
export function userMessage(content: Content): Message {
  const blocks = typeof content === 'string' ? [{ type: 'text' as const, text: content }] : content
  return { id: newMessageId(), role: 'user', content: blocks, source: { kind: 'user' } }
}

/** UTF-8 bytes of the text plus the base64 characters of the images. */
export function promptBytes(content: Content): number {
  if (typeof content === 'string') return Buffer.byteLength(content)
  return content.reduce(
    (sum, block) => sum + (block.type === 'text' ? Buffer.byteLength(block.text) : block.data.length),
    0,
  )
}

/** The prompt's text when it is text only, else undefined. */
export function promptText(content: Content): string | undefined {
  if (typeof content === 'string') return content
  if (content.some((block) => block.type !== 'text')) return undefined
  return content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

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
