import type { Message } from '@dsh/llm'
import type { SessionEvent, SessionMeta } from '@dsh/session'
import { eventUsage } from '@dsh/token-meter'

/** What the catalog keeps about one session, folded from its header and events. */
export interface SessionDigest {
  sessionId: string
  cwd: string
  createdAt: number
  parentSession?: string
  title?: string
  preview?: string
  updatedAt: number
  userMessages: number
  assistantMessages: number
  inputTokens: number
  outputTokens: number
}

const PREVIEW_CHARS = 120

/** The event type of `@dsh/session-titles`; read here by name, so the catalog works without that plugin. */
export const TITLE_EVENT = 'session/title'

export function newDigest(meta: SessionMeta): SessionDigest {
  const digest: SessionDigest = {
    sessionId: meta.id,
    cwd: meta.cwd,
    createdAt: meta.createdAt,
    updatedAt: meta.createdAt,
    userMessages: 0,
    assistantMessages: 0,
    inputTokens: 0,
    outputTokens: 0,
  }
  if (meta.parentSession) digest.parentSession = meta.parentSession
  const title = meta.title?.trim()
  if (title) digest.title = title
  return digest
}

/** The text blocks of a message, one after another (reasoning, tool calls and images left out). */
export function messageText(message: Message | undefined): string {
  if (!message || !Array.isArray(message.content)) return ''
  const parts: string[] = []
  for (const block of message.content) if (block.type === 'text' && block.text) parts.push(block.text)
  return parts.join('\n')
}

function firstLine(text: string): string {
  const line = text.trim().replace(/\s+/g, ' ')
  return line.length > PREVIEW_CHARS ? `${line.slice(0, PREVIEW_CHARS - 1)}…` : line
}

/**
 * Folds one event into `digest` and returns the text it adds to the
 * full-text index: what the user typed and what the model answered. Context
 * that plugins inject as user messages (instructions, summaries) counts as
 * neither and is not indexed.
 */
export function foldEvent(digest: SessionDigest, event: SessionEvent): string | undefined {
  if (typeof event.time === 'number' && event.time > digest.updatedAt) digest.updatedAt = event.time
  const usage = eventUsage(event)
  if (usage) {
    digest.inputTokens += usage.inputTokens || 0
    digest.outputTokens += usage.outputTokens || 0
  }
  switch (event.type as string) {
    case 'user/message': {
      const message = (event as SessionEvent<'user/message'>).data?.message
      if (message?.source?.kind !== 'user') return undefined
      digest.userMessages += 1
      const text = messageText(message)
      if (digest.preview === undefined && text.trim()) digest.preview = firstLine(text)
      return text || undefined
    }
    case 'assistant/message': {
      digest.assistantMessages += 1
      return messageText((event as SessionEvent<'assistant/message'>).data?.message) || undefined
    }
    case TITLE_EVENT: {
      const title = (event.data as { title?: unknown } | undefined)?.title
      if (typeof title === 'string' && title.trim()) digest.title = title.trim()
      return undefined
    }
    default:
      return undefined
  }
}

/** The digest of a whole log, and the texts to index, in order. */
export function digestEvents(
  meta: SessionMeta,
  events: readonly SessionEvent[],
): { digest: SessionDigest; texts: string[] } {
  const digest = newDigest(meta)
  const texts: string[] = []
  for (const event of events) {
    const text = foldEvent(digest, event)
    if (text) texts.push(text)
  }
  return { digest, texts }
}
