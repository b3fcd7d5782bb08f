import type { Context } from '@dsh/cordis'
import type { CompactionConfig } from './config.ts'
import { Compaction } from './service.ts'

export { Config, type CompactionConfig, DEFAULT_PROMPT } from './config.ts'
export {
  Compaction,
  COMPACTION_EVENT,
  type CompactionEventData,
  type CompactionReason,
  type CompactResult,
} from './service.ts'
export { contextTokens, estimateTokens } from './measure.ts'

export const name = 'compaction'
export const inject = ['sessions', 'llm']

/** Provides `ctx.compaction` and, with `auto`, compacts on context pressure and on context overflow. */
export function apply(ctx: Context, config: CompactionConfig) {
  ctx.plugin(Compaction, config)
}
