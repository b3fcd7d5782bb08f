import type { Context } from '@dsh/cordis'
import { AgentRegistry, type AgentRegistryConfig } from './registry.ts'

export * from './types.ts'
export { type TurnSummary, summarizeTurns } from './summary.ts'
export { AgentRegistry, type AgentRegistryConfig, Config, readAgentSettings, readSettingsDocument } from './registry.ts'

export const name = 'agent'
export const inject = ['sessions']

/** Provides `ctx.agents`. */
export function apply(ctx: Context, config: AgentRegistryConfig) {
  ctx.plugin(AgentRegistry, config)
}
