import type { Agent } from '@dsh/agent'
import { type Context, Schema } from '@dsh/cordis'
import { type LoopConfig, LoopAgent } from './agent.ts'

export { LoopAgent, type LoopConfig } from './agent.ts'

export const name = 'agent-loop'
export const inject = ['agents', 'sessions']

export const Config: Schema<LoopConfig> = Schema.object({
  maxParallelToolCalls: Schema.natural()
    .min(1)
    .default(10)
    .description('Concurrency-safe tool calls of one step that may run at once; 1 runs every call alone.'),
  maxStepsPerTurn: Schema.natural()
    .min(1)
    .default(200)
    .description('A turn that reaches this many steps ends with an error instead of looping forever.'),
})

/** Registers the turn/step driver as the agent factory of `ctx.agents`. */
export function apply(ctx: Context, config: LoopConfig) {
  ctx.agents.setFactory(ctx, (home, session, options): Agent => new LoopAgent(home, session, options, config))
}
