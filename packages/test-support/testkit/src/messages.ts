import type { ContentBlock, Message, MessageId } from '@dsh/wire-types'

let nextId = 0

/**
 * A message for a hand-built model request, with a fresh id (`m0`, `m1`, …) and the source its role implies;
 * `model` names who wrote an assistant message.
 */
export function chatMessage(
  role: Message['role'],
  content: ContentBlock[],
  model: { provider: string; model: string } = { provider: 'test', model: 'test-model' },
): Message {
  const source: Message['source'] =
    role === 'assistant' ? { kind: 'model', ...model } : role === 'system' ? { kind: 'system' } : { kind: 'user' }
  return { id: `m${nextId++}` as MessageId, role, content, source }
}

/** A text content block. */
export const textBlock = (text: string): ContentBlock => ({ type: 'text', text })

/** The session events a step logs before its first model call, in order. */
export const STEP_OPENING = [
  'turn/start',
  'step/start',
  'system/message',
  'user/message',
  'request/header',
  'request/context',
]
