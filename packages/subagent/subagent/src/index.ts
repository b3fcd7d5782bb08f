import type {} from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import type {} from '@dsh/permission'
import type {} from '@dsh/system-prompt'
import { BackgroundChildren } from './background.ts'
import { type AgentType, checkConfig, type SubagentConfig } from './config.ts'
import { registerControlTools } from './control.ts'
import { listModelsTool } from './models.ts'
import { inheritPermissions, taskTool } from './task.ts'

export { type AgentType, Config, type SubagentConfig, SUBAGENT_TOOL, toolFilter } from './config.ts'
export { depthOf } from './task.ts'

export const name = 'subagent'
export const inject = ['agents', 'tools', 'sessions', 'systemPrompt']

/**
 * Registers the `subagent` tool: it runs a child agent in a session of its own
 * (linked to the caller's), limited to its type's tools, and returns the
 * child's final answer, or with `run_in_background` its id at once (the
 * answer is injected into the parent later). Also `list_subagent_models` and,
 * with background runs enabled, `list_agents`, `send_message` and
 * `interrupt_agent`. Children get a role section in their system prompt.
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
  // A parent's later change of preset or network reaches its live children (and, through their logs, theirs).
  ctx.on('session/event', (session, event) => {
    if (event.type !== 'permission/preset' && event.type !== 'permission/network') return
    for (const id of children.keys())
      if (ctx.sessions.get(id)?.meta.parentSession === session.id) inheritPermissions(ctx, session.id, id)
  })
  const background = config.enableRunInBackground ? new BackgroundChildren(ctx, config) : undefined
  ctx.tools.register(ctx, taskTool(ctx, config, children, background))
  ctx.tools.register(ctx, listModelsTool(ctx, config))
  if (background) registerControlTools(ctx, background)
}
