import { assertNever } from '@dsh/cordis'
import type { ContentBlock, GenerateRequest, Message, ReasoningEffort } from '@dsh/llm'
import type { ReasoningParams } from './config.ts'

/** The wire shape of one chat message (OpenAI chat completions, DeepSeek flavour). */
export type WireMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | WirePart[] }
  | { role: 'assistant'; content: string | null; reasoning_content?: string; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string }

export type WirePart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } }

export interface WireToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export interface BodyOptions {
  reasoningParams: ReasoningParams
  defaultEffort: ReasoningEffort
  /** `max_tokens` when the request names none. */
  maxTokens?: number
}

/** The effort a request runs with: a title request never thinks. */
export function effortOf(request: GenerateRequest, fallback: ReasoningEffort): ReasoningEffort {
  if (request.purpose === 'title') return 'off'
  return request.reasoningEffort ?? fallback
}

/** Builds the JSON body of `POST /chat/completions` for a request. */
export function buildBody(request: GenerateRequest, options: BodyOptions): Record<string, unknown> {
  const effort = effortOf(request, options.defaultEffort)
  const deepseek = options.reasoningParams === 'deepseek'
  const body: Record<string, unknown> = {
    model: request.model,
    messages: toWireMessages(request.messages, { passReasoning: deepseek, thinking: deepseek && effort !== 'off' }),
    stream: true,
    stream_options: { include_usage: true },
  }
  if (request.tools && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }))
  }
  switch (options.reasoningParams) {
    case 'deepseek':
      if (effort === 'off') body.thinking = { type: 'disabled' }
      else {
        body.thinking = { type: 'enabled' }
        body.reasoning_effort = effort
      }
      break
    case 'effort':
      if (effort !== 'off') body.reasoning_effort = effort
      break
    case 'none':
      break
    default:
      assertNever(options.reasoningParams, 'reasoningParams')
  }
  const maxTokens = request.maxTokens ?? options.maxTokens
  if (maxTokens !== undefined) body.max_tokens = maxTokens
  if (request.temperature !== undefined) body.temperature = request.temperature
  return body
}

interface HistoryOptions {
  /** Send `reasoning_content` back on assistant messages that had reasoning. */
  passReasoning: boolean
  /** Thinking is on: every tool-call turn carries `reasoning_content`, empty if need be. */
  thinking: boolean
}

export function toWireMessages(messages: readonly Message[], options: HistoryOptions): WireMessage[] {
  const out: WireMessage[] = []
  for (const message of messages) {
    switch (message.role) {
      case 'system': {
        const text = textOf(message.content)
        if (text) out.push({ role: 'system', content: text })
        break
      }
      case 'user':
        out.push(...userMessages(message.content))
        break
      case 'assistant':
        out.push(assistantMessage(message.content, options))
        break
      default:
        assertNever(message.role, 'message role')
    }
  }
  return out
}

function textOf(blocks: readonly ContentBlock[], separator = '\n\n'): string {
  return blocks.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join(separator)
}

function imageUrl(block: Extract<ContentBlock, { type: 'image' }>): string {
  if (/^(data:|https?:)/.test(block.data)) return block.data
  return `data:${block.mediaType};base64,${block.data}`
}

/**
 * A user message becomes: one `tool` message per tool result (they must
 * directly follow the assistant's tool calls), then a `user` message with
 * its text and images, plus any images the tool results carried (tool
 * messages take strings only).
 */
function userMessages(blocks: readonly ContentBlock[]): WireMessage[] {
  const out: WireMessage[] = []
  const parts: WirePart[] = []
  const toolImages: WirePart[] = []
  for (const block of blocks) {
    switch (block.type) {
      case 'tool-result': {
        const text = textOf(block.content, '\n')
        out.push({ role: 'tool', tool_call_id: block.toolCallId, content: text.length > 0 ? text : '(no output)' })
        const images = block.content.filter((b) => b.type === 'image')
        if (images.length > 0) {
          toolImages.push({ type: 'text', text: `Images returned by tool call ${block.toolCallId}:` })
          for (const image of images) toolImages.push({ type: 'image_url', image_url: { url: imageUrl(image) } })
        }
        break
      }
      case 'text':
        parts.push({ type: 'text', text: block.text })
        break
      case 'image':
        parts.push({ type: 'image_url', image_url: { url: imageUrl(block) } })
        break
      case 'reasoning':
      case 'tool-call':
        break
      default:
        assertNever(block, 'content block')
    }
  }
  const all = [...toolImages, ...parts]
  if (all.length === 0) {
    if (out.length === 0) out.push({ role: 'user', content: '' })
    return out
  }
  if (all.every((p) => p.type === 'text'))
    out.push({ role: 'user', content: all.map((p) => (p.type === 'text' ? p.text : '')).join('\n\n') })
  else out.push({ role: 'user', content: all })
  return out
}

function assistantMessage(blocks: readonly ContentBlock[], options: HistoryOptions): WireMessage {
  const text = textOf(blocks)
  const reasoning = blocks.flatMap((b) => (b.type === 'reasoning' ? [b.text] : [])).join('')
  const calls: WireToolCall[] = blocks.flatMap((b) =>
    b.type === 'tool-call'
      ? [{ id: b.id, type: 'function' as const, function: { name: b.name, arguments: b.arguments } }]
      : [],
  )
  const message: Extract<WireMessage, { role: 'assistant' }> = {
    role: 'assistant',
    content: text.length > 0 ? text : calls.length > 0 ? null : '',
  }
  if (options.passReasoning && (reasoning.length > 0 || (options.thinking && calls.length > 0)))
    message.reasoning_content = reasoning
  if (calls.length > 0) message.tool_calls = calls
  return message
}
