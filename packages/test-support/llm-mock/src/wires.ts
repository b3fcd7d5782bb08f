import type { EventsReply, JsonReply, ToolCallSpec, WireEvent } from './types.ts'

/** What a reply of another provider's wire carries, described once for every wire. */
export interface WireReplySpec {
  /** Reasoning first (Anthropic `thinking`, Responses `reasoning`), when the wire has it. */
  reasoning?: string
  text?: string
  toolCalls?: ToolCallSpec[]
  /** Input and output tokens the reply reports. Default 11 and 7. */
  inputTokens?: number
  outputTokens?: number
  /** Stream the text in pieces of this many characters. Default: one piece per word. */
  chunkSize?: number
}

let counter = 0
const nextId = (prefix: string) => `${prefix}_${++counter}_${Math.random().toString(36).slice(2, 8)}`

function pieces(text: string, size?: number): string[] {
  if (size && size > 0) {
    const out: string[] = []
    for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
    return out
  }
  return text.match(/\S+\s*|\s+/g) ?? [text]
}

const argumentText = (call: ToolCallSpec) =>
  typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments)

const named = (data: { type: string; [field: string]: unknown }): WireEvent => ({ event: data.type, data })

/** Anthropic Messages, streamed: `message_start`, content blocks with their deltas, `message_delta`, `message_stop`. */
export function anthropicStream(spec: WireReplySpec, model = 'claude-mock'): EventsReply {
  const events: WireEvent[] = []
  const input = spec.inputTokens ?? 11
  events.push(
    named({
      type: 'message_start',
      message: {
        id: nextId('msg'),
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: input, output_tokens: 1 },
      },
    }),
  )
  let index = 0
  if (spec.reasoning) {
    events.push(named({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '' } }))
    for (const piece of pieces(spec.reasoning, spec.chunkSize))
      events.push(named({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } }))
    events.push(named({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: 'sig' } }))
    events.push(named({ type: 'content_block_stop', index }))
    index++
  }
  if (spec.text) {
    events.push(named({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }))
    for (const piece of pieces(spec.text, spec.chunkSize))
      events.push(named({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } }))
    events.push(named({ type: 'content_block_stop', index }))
    index++
  }
  for (const call of spec.toolCalls ?? []) {
    const id = call.id ?? nextId('toolu')
    events.push(
      named({
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id, name: call.name, input: {} },
      }),
    )
    for (const piece of pieces(argumentText(call), 8))
      events.push(
        named({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }),
      )
    events.push(named({ type: 'content_block_stop', index }))
    index++
  }
  const stop = spec.toolCalls?.length ? 'tool_use' : 'end_turn'
  events.push(
    named({
      type: 'message_delta',
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: spec.outputTokens ?? 7 },
    }),
  )
  events.push(named({ type: 'message_stop' }))
  return { kind: 'events', events }
}

/** Gemini `streamGenerateContent?alt=sse`: candidates with parts, the finish reason and usage on the last chunk. */
export function geminiStream(spec: WireReplySpec): EventsReply {
  const events: WireEvent[] = []
  const chunk = (parts: unknown[], last = false) => ({
    data: {
      candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
      ...(last
        ? {
            usageMetadata: {
              promptTokenCount: spec.inputTokens ?? 11,
              candidatesTokenCount: spec.outputTokens ?? 7,
              totalTokenCount: (spec.inputTokens ?? 11) + (spec.outputTokens ?? 7),
            },
          }
        : {}),
      modelVersion: 'gemini-mock',
      responseId: 'resp-mock',
    },
  })
  for (const piece of pieces(spec.text ?? '', spec.chunkSize)) if (piece) events.push(chunk([{ text: piece }]))
  const calls = (spec.toolCalls ?? []).map((call) => ({
    functionCall: {
      ...(call.id ? { id: call.id } : {}),
      name: call.name,
      args: typeof call.arguments === 'string' ? JSON.parse(call.arguments) : call.arguments,
    },
  }))
  events.push(chunk(calls, true))
  return { kind: 'events', events }
}

/** OpenAI Responses API, streamed: output items (reasoning, message, function calls) and `response.completed`. */
export function responsesStream(spec: WireReplySpec, model = 'gpt-mock'): EventsReply {
  const events: WireEvent[] = []
  const responseId = nextId('resp')
  events.push(named({ type: 'response.created', response: { id: responseId, status: 'in_progress', model } }))
  let outputIndex = 0
  if (spec.text) {
    const id = nextId('msg')
    events.push(
      named({
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { type: 'message', id, role: 'assistant', status: 'in_progress', content: [] },
      }),
    )
    events.push(
      named({
        type: 'response.content_part.added',
        item_id: id,
        output_index: outputIndex,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      }),
    )
    for (const piece of pieces(spec.text, spec.chunkSize))
      events.push(
        named({
          type: 'response.output_text.delta',
          item_id: id,
          output_index: outputIndex,
          content_index: 0,
          delta: piece,
        }),
      )
    events.push(
      named({
        type: 'response.output_item.done',
        output_index: outputIndex,
        item: {
          type: 'message',
          id,
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: spec.text, annotations: [] }],
        },
      }),
    )
    outputIndex++
  }
  for (const call of spec.toolCalls ?? []) {
    const id = nextId('fc')
    const callId = call.id ?? nextId('call')
    const args = argumentText(call)
    const item = { type: 'function_call', id, call_id: callId, name: call.name, status: 'in_progress', arguments: '' }
    events.push(named({ type: 'response.output_item.added', output_index: outputIndex, item }))
    for (const piece of pieces(args, 8))
      events.push(
        named({
          type: 'response.function_call_arguments.delta',
          item_id: id,
          output_index: outputIndex,
          delta: piece,
        }),
      )
    events.push(
      named({
        type: 'response.output_item.done',
        output_index: outputIndex,
        item: { ...item, status: 'completed', arguments: args },
      }),
    )
    outputIndex++
  }
  const input = spec.inputTokens ?? 11
  const output = spec.outputTokens ?? 7
  events.push(
    named({
      type: 'response.completed',
      response: {
        id: responseId,
        status: 'completed',
        model,
        usage: {
          input_tokens: input,
          output_tokens: output,
          total_tokens: input + output,
          input_tokens_details: { cached_tokens: 0 },
        },
      },
    }),
  )
  return { kind: 'events', events }
}

/** A JSON answer with status 200 unless given. */
export function json(body: unknown, options: Omit<JsonReply, 'kind' | 'body'> = {}): JsonReply {
  return { ...options, kind: 'json', body }
}

/** A `/models` listing in the OpenAI (and Anthropic) shape: `{object: 'list', data: [{id}]}`. */
export function modelList(ids: string[]): JsonReply {
  return json({ object: 'list', data: ids.map((id) => ({ id, object: 'model', owned_by: 'mock' })) })
}
