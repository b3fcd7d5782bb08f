import { randomBytes, randomUUID } from 'node:crypto'
import type { CompletionReply, ToolCallSpec, UsageSpec } from './types.ts'

/** A rough token count: about four characters a token, at least one for non-empty text. */
export function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4))
}

/** Splits text into deltas: one word (with its trailing space) each, or `size` characters each. */
export function splitText(text: string, size?: number): string[] {
  if (text.length === 0) return []
  if (size && size > 0) {
    const out: string[] = []
    for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
    return out
  }
  return text.match(/^\s+|\S+\s*/g) ?? [text]
}

/** Splits a string into at most `parts` non-empty pieces of about equal length. */
export function splitInto(text: string, parts: number): string[] {
  if (text.length === 0) return []
  const size = Math.ceil(text.length / Math.max(1, parts))
  return splitText(text, size)
}

export function argumentsText(call: ToolCallSpec): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments)
}

interface Envelope {
  id: string
  created: number
  model: string
}

function chunk(env: Envelope, choices: unknown[], usage: unknown = null): string {
  return JSON.stringify({
    id: env.id,
    object: 'chat.completion.chunk',
    created: env.created,
    model: env.model,
    system_fingerprint: 'fp_llm_mock',
    choices,
    usage,
  })
}

function delta(env: Envelope, d: Record<string, unknown>, finishReason: string | null = null): string {
  return chunk(env, [{ index: 0, delta: d, logprobs: null, finish_reason: finishReason }])
}

/** The `usage` object DeepSeek sends, filled in from the spec and the sizes of request and reply. */
export function usageObject(spec: UsageSpec, promptEstimate: number, reply: CompletionReply): Record<string, unknown> {
  const reasoningTokens = spec.reasoningTokens ?? estimateTokens(reply.reasoning ?? '')
  const replyText = (reply.content ?? '') + (reply.toolCalls ?? []).map((c) => c.name + argumentsText(c)).join('')
  const completionTokens = spec.completionTokens ?? reasoningTokens + estimateTokens(replyText)
  const hit = spec.promptCacheHitTokens ?? 0
  const miss = spec.promptCacheMissTokens ?? Math.max(0, promptEstimate - hit)
  return {
    prompt_tokens: hit + miss,
    completion_tokens: completionTokens,
    total_tokens: hit + miss + completionTokens,
    prompt_tokens_details: { cached_tokens: hit },
    completion_tokens_details: { reasoning_tokens: reasoningTokens },
    prompt_cache_hit_tokens: hit,
    prompt_cache_miss_tokens: miss,
  }
}

/**
 * The `data:` payloads of a streamed completion, in order, ending with
 * `[DONE]`: a role chunk (with `reasoning_content: ""` when there is
 * reasoning), reasoning deltas, content deltas, tool-call fragments, the
 * finish chunk, the usage chunk.
 */
export function completionEvents(
  reply: CompletionReply,
  requestModel: string | undefined,
  promptEstimate: number,
): string[] {
  const env: Envelope = {
    id: `chatcmpl-${randomUUID()}`,
    created: Math.floor(Date.now() / 1000),
    model: reply.model ?? requestModel ?? 'deepseek-v4-flash',
  }
  const out: string[] = []
  const reasoning = reply.reasoning ?? ''
  const content = reply.content ?? ''
  const calls = reply.toolCalls ?? []

  out.push(
    delta(
      env,
      reasoning ? { role: 'assistant', content: null, reasoning_content: '' } : { role: 'assistant', content: '' },
    ),
  )
  for (const piece of splitText(reasoning, reply.chunkSize))
    out.push(delta(env, { content: null, reasoning_content: piece }))
  for (const piece of splitText(content, reply.chunkSize))
    out.push(delta(env, reasoning ? { content: piece, reasoning_content: null } : { content: piece }))

  calls.forEach((call, index) => {
    const id = call.id ?? `call_${String(index).padStart(2, '0')}_${randomBytes(8).toString('hex')}`
    out.push(
      delta(env, { tool_calls: [{ index, id, type: 'function', function: { name: call.name, arguments: '' } }] }),
    )
    for (const piece of splitInto(argumentsText(call), reply.argumentFragments ?? 3)) {
      out.push(delta(env, { tool_calls: [{ index, function: { arguments: piece } }] }))
    }
  })

  const finishReason = reply.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop')
  const usage = reply.usage === null ? null : usageObject(reply.usage ?? {}, promptEstimate, reply)
  if (reply.usageOnFinishChunk && usage) {
    out.push(chunk(env, [{ index: 0, delta: { content: '' }, logprobs: null, finish_reason: finishReason }], usage))
  } else {
    out.push(delta(env, { content: '' }, finishReason))
    if (usage) out.push(chunk(env, [], usage))
  }
  out.push('[DONE]')
  return out
}
