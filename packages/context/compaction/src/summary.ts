import type { ContentBlock, Message } from '@dsh/llm'

function clip(text: string, max: number): string {
  if (text.length <= max) return text
  const head = Math.ceil(max * 0.7)
  const tail = max - head
  return `${text.slice(0, head)}\n[… ${text.length - max} characters left out …]\n${text.slice(text.length - tail)}`
}

function blockText(block: ContentBlock, max: number): string | undefined {
  switch (block.type) {
    case 'text':
      return clip(block.text, max)
    case 'reasoning':
      return undefined
    case 'image':
      return '[an image]'
    case 'tool-call':
      return `[calls ${block.name} ${clip(block.arguments, max)}]`
    case 'tool-result': {
      const inner = block.content.map((b) => blockText(b, max) ?? '').join('\n')
      return clip(inner, max)
    }
  }
}

function speaker(message: Message): string {
  switch (message.source.kind) {
    case 'tool':
      return `result of ${message.source.name}`
    case 'plugin':
      return message.source.form === 'summary'
        ? 'summary of earlier conversation'
        : `context from ${message.source.plugin}`
    case 'model':
      return 'assistant'
    default:
      return message.role
  }
}

/** The messages as a plain transcript for the summariser, each part cut to `maxBlockChars`. */
export function transcript(messages: readonly Message[], maxBlockChars: number): string {
  const parts: string[] = []
  for (const message of messages) {
    const body = message.content
      .map((block) => blockText(block, maxBlockChars))
      .filter((text): text is string => text !== undefined && text.length > 0)
      .join('\n')
    if (body) parts.push(`[${speaker(message)}]\n${body}`)
  }
  return parts.join('\n\n')
}

export function summaryText(summary: string): string {
  return (
    'The earlier part of this conversation was compacted to save context. This summary replaces it; the messages after it ' +
    `are verbatim.\n<compacted-summary>\n${summary.trim()}\n</compacted-summary>`
  )
}
