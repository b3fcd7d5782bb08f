import type { Context } from '@dsh/cordis'
import { LlmRuntime } from './runtime.ts'

export const name = 'llm'

/** Provides `ctx.llm`. */
export function apply(ctx: Context) {
  ctx.plugin(LlmRuntime)
}
