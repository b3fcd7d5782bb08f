import type {} from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import type {} from '@dsh/permission'
import type {} from '@dsh/system-prompt'
import { type AgentType, checkConfig, type SubagentConfig } from './config.ts'
import { taskTool } from './task.ts'

export { type AgentType, Config, type SubagentConfig, SUBAGENT_TOOL, toolFilter } from './config.ts'
export { depthOf } from './task.ts'

export const name = 'subagent'
export const inject = ['agents', 'tools', 'sessions', 'systemPrompt']

/**
 * Registers the `task` tool: it runs a child agent in a session of its own
 * (linked to the caller's), limited to its type's tools, and returns the
 * child's final answer. Children get a role section in their system prompt.
 */
export function apply(ctx: Context, config: SubagentConfig) {
  checkConfig(config)
  const children = new Map<string, AgentType>()
  ctx.systemPrompt.section(ctx, {
    name: 'subagent:role',
    order: 10,
    text: (target) => {
      const type = children.get(target.sessionId)
      return type ? [config.rolePrompt, type.prompt ?? ''].join('\n\n') : undefined
    },
  })
  ctx.tools.register(ctx, taskTool(ctx, config, children))
}
