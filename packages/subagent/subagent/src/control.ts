import type { Context } from '@dsh/cordis'
import { textMessage } from '@dsh/session'
import { defineTool, oneLine, textArgument, ToolError, toolParameters } from '@dsh/tools'
import { z } from 'zod'
import type { BackgroundChild, BackgroundChildren } from './background.ts'

const agentId = z.string().trim().min(1).describe('The agent id the subagent call returned (its session id).')

function status(background: BackgroundChildren, entry: BackgroundChild): string {
  if (background.working(entry)) return 'running'
  return entry.lastEnd ? `idle (last turn: ${entry.lastEnd})` : 'idle'
}

function unknownAgent(id: string): ToolError {
  return new ToolError(
    'AGENT_NOT_FOUND',
    `there is no background subagent ${id} below this session; list_agents shows the ones there are`,
  )
}

const listAgentsParameters = toolParameters(
  z.object({
    scope: z
      .enum(['children', 'descendants'])
      .optional()
      .describe('children (default): your direct children; descendants: the whole tree below you.'),
  }),
)

const sendMessageParameters = toolParameters(
  z.object({
    agent_id: agentId,
    message: z.string().trim().min(1).describe('What to tell the subagent; it sees nothing else of your conversation.'),
  }),
)

const interruptParameters = toolParameters(z.object({ agent_id: agentId }))

/** `list_agents`, `send_message` and `interrupt_agent`: the model's handle on its background subagents. */
export function registerControlTools(ctx: Context, background: BackgroundChildren): void {
  ctx.tools.register(
    ctx,
    defineTool({
      name: 'list_agents',
      presentation: { kind: 'read', view: 'generic', title: () => 'List background subagents' },
      description:
        'List the background subagents you started (their agent id, label and status: running, or idle between turns). ' +
        'You are told when one finishes, so use this to recall them, not to poll. scope "descendants" also lists the ' +
        "subagents they started, with each one's parent and depth; only your direct children take send_message.",
      parameters: listAgentsParameters,
      isConcurrencySafe: () => true,
      access: () => ({ kind: 'read', summary: 'list background subagents' }),
      execute: (args, run) => {
        const entries = background.list(run.sessionId, args.scope === 'descendants')
        if (entries.length === 0) return { content: 'You have no background subagents.', meta: { agents: [] } }
        const lines = entries.map((entry) => {
          const tree = args.scope === 'descendants' ? ` depth ${entry.depth}, parent ${entry.parent},` : ''
          return `- ${entry.agent.id}:${tree} ${status(background, entry)} — ${entry.description} (type ${entry.type})`
        })
        const meta = entries.map((entry) => ({
          agentId: entry.agent.id,
          parent: entry.parent,
          depth: entry.depth,
          description: entry.description,
          status: background.working(entry) ? 'running' : 'idle',
          ...(entry.lastEnd ? { lastEnd: entry.lastEnd } : {}),
        }))
        return { content: lines.join('\n'), meta: { agents: meta } }
      },
    }),
  )

  ctx.tools.register(
    ctx,
    defineTool({
      name: 'send_message',
      presentation: {
        kind: 'other',
        view: 'generic',
        title: (args) => `Message to ${oneLine(textArgument(args, 'agent_id') ?? 'a subagent')}`,
      },
      description:
        'Send a message to one of your background subagents by agent id. A working subagent reads it at its next step; ' +
        'an idle one starts a new turn with it, and you are told when that turn ends. This call only confirms delivery; ' +
        'it does not return the answer. A failed call means the message was not delivered.',
      parameters: sendMessageParameters,
      isConcurrencySafe: () => true,
      access: (args) => ({ kind: 'read', summary: `message to subagent ${args.agent_id}` }),
      execute: (args, run) => {
        const entry = background.get(args.agent_id)
        if (!entry || entry.parent !== run.sessionId) {
          if (entry && background.isBelow(args.agent_id, run.sessionId))
            throw new ToolError(
              'NOT_A_DIRECT_CHILD',
              `${args.agent_id} was started by ${entry.parent}, not by you; only your direct children take messages`,
            )
          throw unknownAgent(args.agent_id)
        }
        const idle = !background.working(entry)
        if (idle) background.checkCapacity(run.sessionId)
        const message = textMessage('user', `Message from the agent that started you:\n${args.message}`, {
          kind: 'plugin',
          plugin: 'subagent',
          form: 'notice',
        })
        background.deliver(entry, message, 'steer')
        return {
          content: idle
            ? `Delivered: ${args.agent_id} was idle and starts a new turn with your message; you are told when it ends.`
            : `Delivered: ${args.agent_id} is working and reads your message at its next step.`,
          meta: { sessionId: args.agent_id },
        }
      },
    }),
  )

  ctx.tools.register(
    ctx,
    defineTool({
      name: 'interrupt_agent',
      presentation: {
        kind: 'other',
        view: 'generic',
        title: (args) => `Interrupt ${oneLine(textArgument(args, 'agent_id') ?? 'a subagent')}`,
      },
      description:
        'Stop the current turn of a background subagent (yours, or one started below you) by agent id. The subagent ' +
        'stays available for send_message, and the subagents it started keep running. The call returns once the stop ' +
        'is requested; interrupting an idle subagent does nothing.',
      parameters: interruptParameters,
      isConcurrencySafe: () => true,
      access: (args) => ({ kind: 'read', summary: `interrupt subagent ${args.agent_id}` }),
      execute: (args, run) => {
        const entry = background.get(args.agent_id)
        if (!entry || !background.isBelow(args.agent_id, run.sessionId)) throw unknownAgent(args.agent_id)
        if (!background.working(entry))
          return {
            content: `${args.agent_id} was not working; nothing to interrupt.`,
            meta: { sessionId: args.agent_id },
          }
        entry.agent.cancel('parent')
        return {
          content: `Interrupt requested: ${args.agent_id} stops its current turn; you are told when it has stopped.`,
          meta: { sessionId: args.agent_id },
        }
      },
    }),
  )
}
