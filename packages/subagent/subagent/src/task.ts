import type { Agent } from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import type { SessionEvent, SessionId } from '@dsh/session'
import { defineTool, oneLine, textArgument, textOf, ToolError, type ToolOutput, type ToolRunContext } from '@dsh/tools'
import { z } from 'zod'
import { type AgentType, type SubagentConfig, SUBAGENT_TOOL, toolFilter } from './config.ts'

export interface TaskArgs {
  description: string
  prompt: string
  subagent_type?: string | undefined
}

/** How many ancestors a live session has. */
export function depthOf(ctx: Context, sessionId: string): number {
  let depth = 0
  let current = ctx.sessions.get(sessionId)
  while (current?.meta.parentSession && depth < 1000) {
    depth++
    current = ctx.sessions.get(current.meta.parentSession)
  }
  return depth
}

/** The `subagent` tool; `children` maps each running child session to its type, for the system prompt. */
export function taskTool(ctx: Context, config: SubagentConfig, children: Map<string, AgentType>) {
  const names = Object.keys(config.types) as [string, ...string[]]
  const catalog =
    names.length > 1
      ? `\nSubagent types:\n${names.map((name) => `- ${name}: ${config.types[name]?.description}`).join('\n')}`
      : ''
  const base = {
    description: z
      .string()
      .trim()
      .min(1)
      .max(120)
      .describe('A short label for the task (3-5 words), shown in session lists.'),
    prompt: z
      .string()
      .trim()
      .min(1)
      .describe('The complete task for the subagent, including what its final answer should contain.'),
  }
  // One configured type needs no choice, and the seeds' catalog has none: the parameter exists only with several.
  const choice = z.enum(names).optional().describe(`The kind of subagent (default: ${config.defaultType}).`)
  const withChoice = z.object({ ...base, subagent_type: choice })
  const parameters = names.length > 1 ? withChoice : (z.object(base) as unknown as typeof withChoice)
  return defineTool({
    name: SUBAGENT_TOOL,
    presentation: {
      kind: 'think',
      view: 'generic',
      unfolded: true,
      title: (args) => `Subagent: ${oneLine(textArgument(args, 'description') ?? 'a task')}`,
    },
    description:
      'Hand one self-contained task to a subagent: a fresh agent with its own session and tools that works on its own and returns its final ' +
      'answer as the result of this call. It sees nothing of this conversation, so the prompt must carry every fact, path and constraint it ' +
      'needs and say what the answer should contain. Use it for independent research or a well-separated piece of work; several subagent calls ' +
      `in one reply run at the same time. Subagents cannot ask the user anything or get approvals.${catalog}`,
    parameters,
    timeoutMs: config.timeoutMs,
    isConcurrencySafe: () => true,
    // The child's own calls are each checked against its preset (the parent's); starting it touches nothing.
    access: (args) => ({ kind: 'read', summary: `subagent task "${args.description}"` }),
    execute: (args, run) => runChild(ctx, config, children, args, run),
  })
}

async function runChild(
  ctx: Context,
  config: SubagentConfig,
  children: Map<string, AgentType>,
  args: TaskArgs,
  run: ToolRunContext,
): Promise<ToolOutput> {
  const depth = depthOf(ctx, run.sessionId) + 1
  if (depth > config.maxDepth) {
    throw new ToolError(
      'SUBAGENT_DEPTH',
      `subagents may nest ${config.maxDepth} level(s) deep (maxDepth) and this session is already that deep; do the work yourself`,
    )
  }
  const typeName = args.subagent_type ?? config.defaultType
  const type = config.types[typeName]
  if (!type)
    throw new ToolError(
      'UNKNOWN_SUBAGENT_TYPE',
      `there is no subagent type "${typeName}"; known: ${Object.keys(config.types).join(', ')}`,
    )
  const parent = ctx.agents.get(run.sessionId)
  const child = await ctx.agents.create({
    cwd: run.cwd,
    parentSession: run.sessionId as SessionId,
    title: args.description,
    options: { ...parent?.options, ...(type.model ? { model: type.model } : {}) },
  })
  const cancel = () => child.cancel('parent')
  let unrestrict: (() => void) | undefined
  try {
    children.set(child.id, type)
    unrestrict = ctx.tools.restrict(ctx, child.id, toolFilter(type, depth < config.maxDepth))
    const permission = ctx.get('permission')
    permission?.setPreset(child.id, permission.preset(run.sessionId))
    run.signal.addEventListener('abort', cancel, { once: true })
    if (run.signal.aborted) return outcome(child)
    child.followup(args.prompt)
    await child.whenIdle()
    return outcome(child)
  } finally {
    run.signal.removeEventListener('abort', cancel)
    await ctx.agents.dispose(child)
    unrestrict?.()
    children.delete(child.id)
  }
}

/** The child's final answer, or an error result carrying the code of what stopped it. */
function outcome(child: Agent): ToolOutput {
  const meta = { sessionId: child.id }
  const end = child.session.last('turn/end')
  const replies = child.session.events.filter(
    (e): e is SessionEvent<'assistant/message'> => e.type === 'assistant/message',
  )
  const answer = replies.map((e) => textOf(e.data.message.content).trim()).findLast((text) => text.length > 0) ?? ''
  const partial = answer ? `\nIts last message:\n${answer}` : ''
  switch (end?.data.reason) {
    case 'completed':
      return { content: answer || '(the subagent finished without a final message)', meta }
    case 'error': {
      const code = end.data.error?.code ?? 'SUBAGENT_FAILED'
      const message = end.data.error?.message ?? 'no details'
      return {
        isError: true,
        code,
        content: `Error: the subagent (session ${child.id}) failed with ${code}: ${message}${partial}`,
        meta,
      }
    }
    case 'max-tokens':
      return {
        isError: true,
        code: 'SUBAGENT_MAX_TOKENS',
        content: `Error: the subagent's reply was cut at the output token limit (session ${child.id}).${partial}`,
        meta,
      }
    default:
      return {
        isError: true,
        code: 'SUBAGENT_CANCELLED',
        content: `Error: the subagent was stopped before it finished (session ${child.id}).${partial}`,
        meta,
      }
  }
}
