import type { ContentBlock, Message } from '@dsh/llm'
import { messageOf, type Session, type SessionEvent } from '@dsh/session'

export interface Estimator {
  charsPerToken: number
  imageTokens: number
}

function blockChars(block: ContentBlock, images: { count: number }): number {
  switch (block.type) {
    case 'text':
    case 'reasoning':
      return block.text.length
    case 'image':
      images.count++
      return 0
    case 'tool-call':
      return block.name.length + block.arguments.length
    case 'tool-result':
      return block.content.reduce((sum, inner) => sum + blockChars(inner, images), 0)
  }
}

/** A rough token count of messages: characters over `charsPerToken`, plus a fixed price per image. */
export function estimateTokens(messages: readonly Message[], estimator: Estimator): number {
  const images = { count: 0 }
  let chars = 0
  for (const message of messages) for (const block of message.content) chars += blockChars(block, images)
  return Math.ceil(chars / estimator.charsPerToken) + images.count * estimator.imageTokens
}

function eventTokens(event: SessionEvent | undefined, estimator: Estimator): number {
  const message = event && messageOf(event)
  return message ? estimateTokens([message], estimator) : 0
}

/**
 * How many tokens the next request would hold. The latest reply's usage
 * measured its request exactly; what was added to the history since is
 * estimated, and what was taken out of it since (compaction, a new system
 * prompt) is subtracted. Without any usage, the whole history is estimated.
 */
export function contextTokens(session: Session, estimator: Estimator): number {
  const events = session.events
  const bySeq = new Map<number, SessionEvent>()
  for (const event of events) bySeq.set(event.seq, event)
  let anchor: SessionEvent<'assistant/message'> | undefined
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if (event.type === 'assistant/message' && (event as SessionEvent<'assistant/message'>).data.usage) {
      anchor = event as SessionEvent<'assistant/message'>
      break
    }
  }
  const surface = session.surface()
  if (!anchor?.data.usage) return surface.reduce((sum, seq) => sum + eventTokens(bySeq.get(seq), estimator), 0)
  const { usage } = anchor.data
  let tokens = usage.inputTokens + (usage.cacheReadTokens ?? 0) + usage.outputTokens
  for (const seq of surface) if (seq > anchor.seq) tokens += eventTokens(bySeq.get(seq), estimator)
  for (const event of events) {
    if (event.seq <= anchor.seq || !event.replaces) continue
    for (const seq of event.replaces) if (seq <= anchor.seq) tokens -= eventTokens(bySeq.get(seq), estimator)
  }
  return Math.max(0, tokens)
}
