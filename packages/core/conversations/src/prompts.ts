import type { Message } from '@dsh/llm'
import { newMessageId } from '@dsh/session'
import type { ContentBlock } from '@dsh/wire-types'
import { ConversationError, invalid } from './errors.ts'
import type { Conversations } from './service.ts'

/** A block of a prompt: text or an image. */
export type PromptBlock = Extract<ContentBlock, { type: 'text' | 'image' }>

/** What a user sends as a prompt: text, or text and image blocks. */
export type PromptInput = string | readonly PromptBlock[]

/** The prompt as the content blocks of one user message. */
export function userMessage(content: PromptInput): Message {
  const blocks = typeof content === 'string' ? [{ type: 'text' as const, text: content }] : [...content]
  return { id: newMessageId(), role: 'user', content: blocks, source: { kind: 'user' } }
}

/** UTF-8 bytes of the text plus the base64 characters of the images. */
export function promptBytes(content: PromptInput): number {
  if (typeof content === 'string') return Buffer.byteLength(content)
  return content.reduce(
    (sum, block) => sum + (block.type === 'text' ? Buffer.byteLength(block.text) : block.data.length),
    0,
  )
}

/** The prompt's text when it is text only, else undefined. */
export function promptText(content: PromptInput): string | undefined {
  if (typeof content === 'string') return content
  if (content.some((block) => block.type !== 'text')) return undefined
  return content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

/**
 * The user message of a prompt of at most `maxBytes` (`promptBytes`); a larger
 * or an empty one is refused `invalid` naming `content` (`setting` is the
 * config field of the limit, named in the refusal).
 */
export function checkedPrompt(content: PromptInput, maxBytes: number, setting: string): Message {
  const bytes = promptBytes(content)
  if (bytes > maxBytes)
    throw invalid('content', `the prompt is ${bytes} bytes, more than the limit of ${maxBytes} (${setting})`)
  if (promptText(content)?.trim() === '') throw invalid('content', 'the prompt is empty')
  return userMessage(content)
}

/** What a built-in command did: a sentence for the user, and the failure when it failed. */
export interface CommandReply {
  text: string
  error?: { code: 'COMPACTION_UNAVAILABLE' | 'COMPACTION_FAILED'; message: string }
}

/**
 * Runs the built-in command a prompt's whole (trimmed) text names instead of
 * a turn; undefined, at once, for any other text. `/compact` compacts the
 * conversation; `/plan` and `/plan off` turn plan mode on and off (logged, as
 * by `configure`). Nothing reaches the model.
 */
export function runCommand(conversations: Conversations, id: string, text: string): Promise<CommandReply> | undefined {
  if (text === '/plan' || text === '/plan off') return plan(conversations, id, text === '/plan')
  if (text === '/compact') return compact(conversations, id)
  return undefined
}

async function plan(conversations: Conversations, id: string, on: boolean): Promise<CommandReply> {
  await conversations.configure(id, { plan: on })
  return {
    text: on
      ? 'Plan mode is on: only read-only tools run until you approve a plan (or send /plan off).'
      : "Plan mode is off: tools run under the session's permission preset again.",
  }
}

async function compact(conversations: Conversations, id: string): Promise<CommandReply> {
  const failed = (code: NonNullable<CommandReply['error']>['code'], message: string): CommandReply => ({
    text: message,
    error: { code, message },
  })
  try {
    const outcome = await conversations.compact(id)
    if (outcome.error) return failed('COMPACTION_FAILED', `compaction failed: ${outcome.error}`)
    return {
      text: outcome.compacted
        ? `Compacted the conversation: ${outcome.replaced} earlier messages were replaced by a summary.`
        : 'Nothing to compact: the conversation is already short.',
    }
  } catch (error) {
    if (error instanceof ConversationError && error.kind === 'unavailable')
      return failed('COMPACTION_UNAVAILABLE', '/compact is not available: this profile has no compaction plugin')
    throw error
  }
}
