import { Schema } from '@dsh/cordis'
import { BlockAssembler } from './assembler.ts'
import type { LlmRuntime } from './runtime.ts'
import type { FinishReason, GenerateRequest, LlmFailure, TokenUsage } from './types.ts'

/** A one-shot model call that failed or was cancelled; `failure` says why. */
export class LlmCallError extends Error {
  override name = 'LlmCallError'

  constructor(readonly failure: LlmFailure) {
    super(`${failure.code}: ${failure.message}`)
  }
}

export interface CompletedText {
  /** The reply's text blocks joined; reasoning and tool calls left out. */
  text: string
  finish: FinishReason
  usage?: TokenUsage
}

/**
 * Runs one request to its end and returns the text, for plugins that ask
 * the model something on the side (titles, summaries). Rejects with an
 * `LlmCallError` when the call fails or is cancelled.
 */
export async function completeText(llm: LlmRuntime, request: GenerateRequest): Promise<CompletedText> {
  const assembler = new BlockAssembler()
  for await (const chunk of llm.stream(request)) assembler.push(chunk)
  const finish = assembler.finish
  if (!finish || finish.reason === 'error' || finish.reason === 'aborted') {
    throw new LlmCallError(
      finish?.failure ?? {
        code: finish?.reason === 'aborted' ? 'ABORTED' : 'PROTOCOL',
        message: 'the model call ended without a reply',
      },
    )
  }
  const text = assembler
    .blocks()
    .map((block) => (block.type === 'text' ? block.text : ''))
    .join('')
  return { text, finish: finish.reason, ...(assembler.usage ? { usage: assembler.usage } : {}) }
}

/**
 * The config fields of such a call on the side: `provider` and `model` (unset: `fallback`, e.g. "the agent's") and
 * `maxTokens`, its output cap. `call` names it in the descriptions ("summary call").
 */
export function sideCallFields(call: string, maxTokens: number, fallback: string) {
  return {
    provider: Schema.string().description(`Route of the ${call}; default: ${fallback}.`),
    model: Schema.string().description(`Model of the ${call}; default: ${fallback}.`),
    maxTokens: Schema.natural().min(1).default(maxTokens).description(`Output token cap of the ${call}.`),
  }
}
