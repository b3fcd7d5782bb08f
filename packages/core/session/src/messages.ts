import { randomUUID } from 'node:crypto'
import type { Message, MessageId, MessageSource, Role } from '@dsh/llm'

export function newMessageId(): MessageId {
  return randomUUID() as MessageId
}

export function textMessage(role: Role, text: string, source: MessageSource): Message {
  return { id: newMessageId(), role, content: [{ type: 'text', text }], source }
}
