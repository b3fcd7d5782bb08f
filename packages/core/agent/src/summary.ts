import { addUsage, noUsage, type TokenUsage } from '@dsh/llm'
import type { SessionEvent } from '@dsh/session'

/** What a stretch of a session's events (one turn, or a run's) came to. */
export interface TurnSummary {
  /** The last `turn/end`; none when no turn ended (the agent stopped first). */
  end?: SessionEvent<'turn/end'>
  /** The text of the last assistant message that has any, trimmed; '' when none has. */
  text: string
  /** Tokens of every model call, failed attempts included. */
  usage: Required<TokenUsage>
}

function messageText(event: SessionEvent<'assistant/message'>): string {
  return event.data.message.content
    .map((block) => (block.type === 'text' ? block.text : ''))
    .join('')
    .trim()
}

/** Reads how `events` ended, the answer and the tokens spent, as surfaces report a turn. */
export function summarizeTurns(events: readonly SessionEvent[]): TurnSummary {
  const summary: TurnSummary = { text: '', usage: noUsage() }
  for (const event of events) {
    if (event.type === 'turn/end') summary.end = event as SessionEvent<'turn/end'>
    if (event.type !== 'assistant/message' && event.type !== 'assistant/attempt') continue
    const { usage } = (event as SessionEvent<'assistant/message' | 'assistant/attempt'>).data
    if (usage) addUsage(summary.usage, usage)
    if (event.type === 'assistant/message')
      summary.text = messageText(event as SessionEvent<'assistant/message'>) || summary.text
  }
  return summary
}
