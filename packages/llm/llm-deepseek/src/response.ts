import { randomBytes } from 'node:crypto'
import { failure, type LlmFailure, type StreamChunk, type TokenUsage } from '@dsh/llm'
import { providerMessage } from './errors.ts'

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)
const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined

/** DeepSeek usage → TokenUsage. Input counts only the tokens that missed the cache. */
export function mapUsage(usage: Json): TokenUsage {
  const promptDetails = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {}
  const completionDetails = isObject(usage.completion_tokens_details) ? usage.completion_tokens_details : {}
  const prompt = count(usage.prompt_tokens)
  const cacheRead = count(usage.prompt_cache_hit_tokens) ?? count(promptDetails.cached_tokens)
  const input = count(usage.prompt_cache_miss_tokens) ?? (prompt !== undefined ? prompt - (cacheRead ?? 0) : 0)
  const out: TokenUsage = { inputTokens: Math.max(0, input), outputTokens: count(usage.completion_tokens) ?? 0 }
  if (cacheRead !== undefined) out.cacheReadTokens = cacheRead
  const reasoning = count(completionDetails.reasoning_tokens)
  if (reasoning !== undefined) out.reasoningTokens = reasoning
  return out
}

/**
 * Turns parsed chunk payloads into stream chunks. Every block gets its own
 * index in order of appearance; a switch between reasoning and text opens a
 * new block, and each wire tool call (by its `index`) is one block.
 */
export class ChunkMapper {
  private nextIndex = 0
  private open: { kind: 'text' | 'reasoning'; index: number } | undefined
  private readonly tools = new Map<number, { index: number; id: string; named: boolean }>()
  private finishReason: string | undefined
  private usage: TokenUsage | undefined
  private sawText = false

  constructor(private readonly label: string) {}

  /** The chunks one payload yields; a failure when the payload is an error report. */
  map(payload: unknown): { chunks: StreamChunk[]; failure?: LlmFailure } {
    if (!isObject(payload))
      return { chunks: [], failure: failure('PROTOCOL', `${this.label} sent a stream event that is not a JSON object`) }
    if (payload.error !== undefined && payload.error !== null) {
      return {
        chunks: [],
        failure: failure(
          'SERVER',
          `${this.label} reported an error mid-reply: ${providerMessage(JSON.stringify(payload))}`,
        ),
      }
    }
    if (isObject(payload.usage)) this.usage = mapUsage(payload.usage)
    const chunks: StreamChunk[] = []
    const choice = Array.isArray(payload.choices) ? payload.choices[0] : undefined
    if (!isObject(choice)) return { chunks }
    const delta = isObject(choice.delta) ? choice.delta : {}

    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content.length > 0) {
      chunks.push({ type: 'reasoning-delta', index: this.block('reasoning'), text: delta.reasoning_content })
    }
    if (typeof delta.content === 'string' && delta.content.length > 0) {
      this.sawText = true
      chunks.push({ type: 'text-delta', index: this.block('text'), text: delta.content })
    }
    if (Array.isArray(delta.tool_calls)) {
      delta.tool_calls.forEach((call: unknown, position) => {
        if (isObject(call)) chunks.push(...this.toolCall(call, position))
      })
    }
    if (typeof choice.finish_reason === 'string' && choice.finish_reason.length > 0)
      this.finishReason = choice.finish_reason
    return { chunks }
  }

  /** Whether the server already said how the reply ended (for streams that end without `[DONE]`). */
  get finished(): boolean {
    return this.finishReason !== undefined
  }

  /** `usage` (when reported) and the terminal `finish`. */
  end(): StreamChunk[] {
    const out: StreamChunk[] = []
    if (this.usage) out.push({ type: 'usage', usage: this.usage })
    out.push(this.finish())
    return out
  }

  private finish(): StreamChunk {
    const hasTools = this.tools.size > 0
    switch (this.finishReason) {
      case 'length':
        return { type: 'finish', reason: 'max-tokens' }
      case 'content_filter':
        return {
          type: 'finish',
          reason: 'error',
          failure: failure('CONTENT_FILTER', `${this.label} stopped the reply: its content filter flagged it`),
        }
      case 'insufficient_system_resource':
        return {
          type: 'finish',
          reason: 'error',
          failure: failure(
            'SERVER',
            `${this.label} ran out of capacity mid-reply (finish_reason insufficient_system_resource)`,
          ),
        }
    }
    if (hasTools) return { type: 'finish', reason: 'tool-calls' }
    if (!this.sawText)
      return {
        type: 'finish',
        reason: 'error',
        failure: failure('EMPTY_RESPONSE', `${this.label} ended the reply without any text or tool call`),
      }
    return { type: 'finish', reason: 'stop' }
  }

  private block(kind: 'text' | 'reasoning'): number {
    if (this.open?.kind !== kind) this.open = { kind, index: this.nextIndex++ }
    return this.open.index
  }

  private toolCall(call: Json, position: number): StreamChunk[] {
    const wire = count(call.index) ?? position
    const fn = isObject(call.function) ? call.function : {}
    const id = typeof call.id === 'string' && call.id.length > 0 ? call.id : undefined
    const name = typeof fn.name === 'string' && fn.name.length > 0 ? fn.name : undefined
    const args = typeof fn.arguments === 'string' ? fn.arguments : ''
    const known = this.tools.get(wire)
    // Some servers number every call 0 and tell them apart by id.
    if (known && !(id !== undefined && id !== known.id && name !== undefined)) {
      if (name !== undefined && !known.named) {
        known.named = true
        return [{ type: 'tool-call-delta', index: known.index, name, argumentsDelta: args }]
      }
      return args.length > 0 ? [{ type: 'tool-call-delta', index: known.index, argumentsDelta: args }] : []
    }
    this.open = undefined
    const entry = {
      index: this.nextIndex++,
      id: id ?? `call_${wire}_${randomBytes(6).toString('hex')}`,
      named: name !== undefined,
    }
    this.tools.set(wire, entry)
    const chunk: StreamChunk = { type: 'tool-call-delta', index: entry.index, id: entry.id, argumentsDelta: args }
    if (name !== undefined) chunk.name = name
    return [chunk]
  }
}
