import { isObject, type LoggedEvent, ReplayError, type SessionLog } from './log.ts'
import { modelCalls } from './replies.ts'

/** One chat message of a request, reduced to its role and the tool-call ids it carries. */
export interface WireMessageSummary {
  role: string
  /** On `tool` messages: the call they answer. */
  toolCallId?: string
  /** On `assistant` messages: the ids of the calls they make, in order. */
  toolCalls?: string[]
}

/** What a chat-completions request carried, reduced to what a log determines without its text. */
export interface RequestSummary {
  model: string
  /** The names of the tools offered, in order. */
  tools: string[]
  messages: WireMessageSummary[]
}

const SURFACE_TYPES = new Set(['system/message', 'user/message', 'assistant/message', 'tool/result'])

const blocksOf = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter(isObject) : [])

/**
 * The wire messages one logged message becomes in a DeepSeek / OpenAI-style
 * request: a system message when it has text; for a user message, one `tool`
 * message per tool result, then a `user` message when it holds text or images
 * (or nothing else at all); for an assistant message, one `assistant` message.
 */
function wireMessages(event: LoggedEvent): WireMessageSummary[] {
  const message = event.data.message
  if (!isObject(message)) throw new ReplayError(`event seq ${event.seq} (${event.type}): data.message is missing`)
  const blocks = blocksOf(message.content)
  switch (message.role) {
    case 'system':
      return blocks.some((b) => b.type === 'text' && b.text !== '') ? [{ role: 'system' }] : []
    case 'assistant':
      return [{ role: 'assistant', toolCalls: blocks.filter((b) => b.type === 'tool-call').map((b) => String(b.id)) }]
    case 'user': {
      const out: WireMessageSummary[] = blocks
        .filter((b) => b.type === 'tool-result')
        .map((b) => ({ role: 'tool', toolCallId: String(b.toolCallId) }))
      const own = blocks.some((b) => b.type === 'text' || b.type === 'image')
      const toolImages = blocks.some(
        (b) => b.type === 'tool-result' && blocksOf(b.content).some((c) => c.type === 'image'),
      )
      if (own || toolImages || out.length === 0) out.push({ role: 'user' })
      return out
    }
    default:
      throw new ReplayError(`event seq ${event.seq} (${event.type}): unknown message role ${String(message.role)}`)
  }
}

/**
 * The requests a run that replays this log should send, one per reply of
 * `repliesFromLog` and in the same order: the model and tools of the latest
 * `request/header`, and the history as the surface events logged before the
 * call (minus those a later event `replaces`). Each failed attempt repeats the
 * history of the call it retries.
 */
export function expectedRequests(log: SessionLog): RequestSummary[] {
  const calls = new Set(modelCalls(log))
  const history: { seq: number; messages: WireMessageSummary[] }[] = []
  let header: RequestSummary | undefined
  const out: RequestSummary[] = []
  for (const event of log.events) {
    if (calls.has(event)) {
      if (!header)
        throw new ReplayError(`event seq ${event.seq} (${event.type}): no request/header before the first model call`)
      out.push({ ...header, messages: history.flatMap((entry) => entry.messages) })
    }
    if (event.type === 'request/header') {
      const tools = Array.isArray(event.data.tools)
        ? event.data.tools.filter(isObject).map((tool) => String(tool.name))
        : []
      header = { model: String(event.data.model), tools, messages: [] }
    } else if (SURFACE_TYPES.has(event.type)) {
      if (event.replaces) {
        const gone = new Set(event.replaces)
        for (let i = history.length - 1; i >= 0; i--)
          if (gone.has((history[i] as { seq: number }).seq)) history.splice(i, 1)
      }
      history.push({ seq: event.seq, messages: wireMessages(event) })
    }
  }
  return out
}

/** The same summary of a request body as the mock recorded it (`mock.requests[i].body`). */
export function describeRequest(body: unknown): RequestSummary {
  if (!isObject(body) || !Array.isArray(body.messages)) throw new ReplayError('the request body has no messages array')
  const tools = Array.isArray(body.tools)
    ? body.tools.filter(isObject).map((tool) => String(isObject(tool.function) ? tool.function.name : undefined))
    : []
  const messages = body.messages.filter(isObject).map((message): WireMessageSummary => {
    const role = String(message.role)
    if (role === 'tool') return { role, toolCallId: String(message.tool_call_id) }
    if (role === 'assistant') return { role, toolCalls: blocksOf(message.tool_calls).map((call) => String(call.id)) }
    return { role }
  })
  return { model: String(body.model), tools, messages }
}
