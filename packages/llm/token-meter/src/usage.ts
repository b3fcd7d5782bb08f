import type { TokenUsage } from '@dsh/llm'
import type { SessionEvent } from '@dsh/session'

/** The usage an event reports: replies and failed attempts carry it, other events do not. */
export function eventUsage(event: SessionEvent): TokenUsage | undefined {
  if (event.type === 'assistant/message') return (event as SessionEvent<'assistant/message'>).data.usage
  if (event.type === 'assistant/attempt') return (event as SessionEvent<'assistant/attempt'>).data.usage
  return undefined
}
