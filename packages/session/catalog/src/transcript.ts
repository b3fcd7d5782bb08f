import type { SessionEvent } from '@dsh/session'
import type { SessionHolder } from '@dsh/session-persistence'
import type { UsageReport } from '@dsh/wire-types'
import { messageText, type SessionDigest } from './digest.ts'

export interface ToolCallLine {
  name: string
  arguments: string
  error?: string
}

export type TranscriptItem =
  | { kind: 'user'; time: number; text: string }
  | { kind: 'assistant'; time: number; text: string; calls: ToolCallLine[] }
  | { kind: 'turn-end'; time: number; turn: number; reason: string; error?: string }

/** What a person reads of a log: prompts, answers, the tool calls of each answer, and turns that did not complete. */
export function transcriptOf(events: readonly SessionEvent[]): TranscriptItem[] {
  const items: TranscriptItem[] = []
  const calls = new Map<string, ToolCallLine>()
  for (const event of events) {
    if (event.type === 'user/message') {
      const message = (event as SessionEvent<'user/message'>).data?.message
      if (message?.source?.kind === 'user') items.push({ kind: 'user', time: event.time, text: messageText(message) })
    } else if (event.type === 'assistant/message') {
      const message = (event as SessionEvent<'assistant/message'>).data?.message
      const lines: ToolCallLine[] = []
      for (const block of message?.content ?? []) {
        if (block.type !== 'tool-call') continue
        const line: ToolCallLine = { name: block.name, arguments: block.arguments }
        calls.set(block.id, line)
        lines.push(line)
      }
      items.push({ kind: 'assistant', time: event.time, text: messageText(message), calls: lines })
    } else if (event.type === 'tool/result') {
      const data = (event as SessionEvent<'tool/result'>).data
      const line = data?.error && calls.get(data.callId)
      if (line) line.error = data.error?.message || data.error?.code
    } else if (event.type === 'turn/end') {
      const data = (event as SessionEvent<'turn/end'>).data
      if (data?.reason !== 'completed') {
        const item: TranscriptItem = {
          kind: 'turn-end',
          time: event.time,
          turn: data?.turn,
          reason: String(data?.reason),
        }
        if (data?.error?.message) item.error = data.error.message
        items.push(item)
      }
    }
  }
  return items
}

const pad = (n: number) => String(n).padStart(2, '0')

/** Local time, `YYYY-MM-DD HH:MM`. */
export function formatTime(time: number, seconds = false): string {
  const d = new Date(time)
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`
  return `${day} ${pad(d.getHours())}:${pad(d.getMinutes())}${seconds ? `:${pad(d.getSeconds())}` : ''}`
}

/** Collapses whitespace and cuts to `max` characters. */
export function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

const callLine = (call: ToolCallLine) =>
  `${call.name} ${oneLine(call.arguments, 100)}${call.error ? `  [failed: ${oneLine(call.error, 80)}]` : ''}`

function facts(digest: SessionDigest, file?: string): [string, string][] {
  const rows: [string, string][] = [['session', digest.sessionId]]
  if (digest.title) rows.push(['title', digest.title])
  rows.push(
    ['folder', digest.cwd],
    ['started', formatTime(digest.createdAt, true)],
    ['updated', formatTime(digest.updatedAt, true)],
  )
  if (digest.parentSession) rows.push(['parent', digest.parentSession])
  rows.push(['messages', `${digest.userMessages} from the user, ${digest.assistantMessages} from the model`])
  rows.push(['tokens', `${digest.inputTokens} in, ${digest.outputTokens} out`])
  if (file) rows.push(['log', file])
  return rows
}

/** Cost (all turns, then each) and context use, as `meterUsage` measured them. */
function usageRows(report: UsageReport): [string, string][] {
  const rows: [string, string][] = []
  const dollars = (usd: number) => `$${usd.toFixed(6)}`
  if (report.costUsd !== undefined) {
    const perTurn = report.turns
      .map((t) => (t.costUsd === undefined ? undefined : `turn ${t.turn} ${dollars(t.costUsd)}`))
      .filter((text) => text !== undefined)
    rows.push(['cost', `${dollars(report.costUsd)} (${perTurn.join(', ')})`])
  }
  if (report.unpriced) rows.push(['unpriced', report.unpriced.join(', ')])
  if (report.context) {
    const { tokens, window, percent } = report.context
    rows.push(['context', `${percent}% of ${window} tokens (${tokens} after the last reply)`])
  }
  return rows
}

/** `dsh sessions show`: the facts (with the dsh process that has the session open, if another one does), then the conversation. */
export function renderShow(
  digest: SessionDigest,
  events: readonly SessionEvent[],
  file: string,
  openIn?: SessionHolder,
  usage?: UsageReport,
): string {
  const rows = facts(digest, file)
  if (usage) rows.push(...usageRows(usage))
  if (openIn) rows.push(['open', `in process ${openIn.pid} on ${openIn.host}, since ${formatTime(openIn.since, true)}`])
  const out = rows.map(([key, value]) => `${key.padEnd(9)}${value}`)
  for (const item of transcriptOf(events)) {
    out.push('')
    if (item.kind === 'turn-end') {
      out.push(`-- turn ${item.turn} ended: ${item.reason}${item.error ? ` (${item.error})` : ''} --`)
      continue
    }
    out.push(`-- ${item.kind} · ${formatTime(item.time, true)} --`)
    if (item.text) out.push(item.text)
    if (item.kind === 'assistant') for (const call of item.calls) out.push(`  > ${callLine(call)}`)
  }
  return `${out.join('\n')}\n`
}

/** Inline code that survives backticks in `text`. */
function code(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length))
  const fence = '`'.repeat(longest + 1)
  return longest ? `${fence} ${text} ${fence}` : `${fence}${text}${fence}`
}

/** `dsh sessions export --format markdown`: a readable document of the session. */
export function renderMarkdown(digest: SessionDigest, events: readonly SessionEvent[]): string {
  const out = [`# ${digest.title ?? `Session ${digest.sessionId}`}`, '']
  for (const [key, value] of facts(digest))
    out.push(
      `- ${key[0]?.toUpperCase()}${key.slice(1)}: ${key === 'session' || key === 'folder' || key === 'parent' ? code(value) : value}`,
    )
  for (const item of transcriptOf(events)) {
    out.push('')
    if (item.kind === 'turn-end') {
      out.push(`*Turn ${item.turn} ended: ${item.reason}${item.error ? ` (${item.error})` : ''}*`)
      continue
    }
    out.push(item.kind === 'user' ? '## User' : '## Assistant', '')
    if (item.text) out.push(item.text)
    if (item.kind === 'assistant' && item.calls.length) {
      if (item.text) out.push('')
      for (const call of item.calls)
        out.push(
          `- Tool ${code(call.name)} ${code(oneLine(call.arguments, 300))}${call.error ? ` failed: ${oneLine(call.error, 200)}` : ''}`,
        )
    }
  }
  return `${out.join('\n').trimEnd()}\n`
}
