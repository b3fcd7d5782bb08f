import { isEvent, type SessionEvent } from '@dsh/web-client'
import { textOf } from '../model/conversation.ts'

export interface ExportedSession {
  sessionId: string
  title?: string
  cwd: string
  events: readonly SessionEvent[]
}

/** The log as it is stored: one event per line. */
export function sessionJsonl(session: ExportedSession): string {
  return session.events.map((event) => JSON.stringify(event)).join('\n') + (session.events.length ? '\n' : '')
}

/** A readable transcript: the prompts, the replies, and each tool call with its result. */
export function sessionMarkdown(session: ExportedSession): string {
  const out: string[] = [`# ${session.title ?? 'Untitled session'}`, '', `Session \`${session.sessionId}\` in \`${session.cwd}\``]
  for (const event of session.events) {
    if (isEvent(event, 'user/message')) {
      const { message } = event.data
      if (message.source.kind !== 'user') continue
      out.push('', '## User', '', textOf(message.content))
    } else if (isEvent(event, 'assistant/message')) {
      const text = textOf(event.data.message.content).trim()
      if (text) out.push('', '## Assistant', '', text)
    } else if (isEvent(event, 'tool/call')) {
      out.push('', `### Tool call: ${event.data.name}`, '', fence(event.data.arguments, 'json'))
    } else if (isEvent(event, 'tool/result')) {
      const block = event.data.message.content.find((b) => b.type === 'tool-result')
      const content = block?.type === 'tool-result' ? block.content : event.data.message.content
      const label = event.data.error ? `Result (${event.data.error.code})` : 'Result'
      out.push('', `${label}:`, '', fence(textOf(content) || event.data.error?.message || '', ''))
    }
  }
  return `${out.join('\n')}\n`
}

/** A code fence longer than any run of backticks inside the text. */
function fence(text: string, language: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length))
  const ticks = '`'.repeat(longest + 1)
  return `${ticks}${language}\n${text}\n${ticks}`
}

/** Saves text as a file through the browser's download. */
export function download(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const link = document.createElement('a')
  link.href = url
  link.download = name
  link.click()
  setTimeout(() => URL.revokeObjectURL(url), 0)
}
