import type { Agent, AgentOptions } from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import { REASONING_EFFORTS, type ReasoningEffort } from '@dsh/llm'
import type { SessionEvent, SessionId } from '@dsh/session'
import {
  defineTool,
  oneLine,
  textArgument,
  textOf,
  ToolError,
  type ToolOutput,
  type ToolRunContext,
  toolParametersBy,
} from '@dsh/tools'
import { z } from 'zod'
import type { BackgroundChildren } from './background.ts'
import { type AgentType, Config, type SubagentConfig, SUBAGENT_TOOL, toolFilter } from './config.ts'

export interface TaskArgs {
  description: string
  prompt: string
  subagent_type?: string | undefined
  run_in_background?: boolean | undefined
  provider?: string | undefined
  model?: string | undefined
  reasoning_effort?: ReasoningEffort | undefined
}

/** A child agent set up for a task; `release` takes its tool subset and prompt section away once it is disposed. */
export interface StartedChild {
  agent: Agent
  type: string
  release(): void
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

/**
 * The subagent tool's parameters. Each optional part exists only when configured, so the default schema is the
 * seeds' own: `subagent_type` when there are several types (`typeNames`, comma-separated; type names hold no
 * comma), `run_in_background` with background runs, the model choice with `modelSelection`.
 */
const taskParameters = toolParametersBy(
  (typeNames: string, defaultType: string, background: boolean, modelSelection: boolean) => {
    const shape: Record<string, z.ZodType> = {
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
    const names = typeNames.split(',')
    if (names.length > 1)
      shape.subagent_type = z
        .enum(names as [string, ...string[]])
        .optional()
        .describe(`The kind of subagent (default: ${defaultType}).`)
    if (background)
      shape.run_in_background = z
        .boolean()
        .optional()
        .describe(
          'true: start the subagent and return its agent id at once; you are told when it finishes. Default false: wait for its answer.',
        )
    if (modelSelection) {
      shape.provider = z.string().min(1).optional().describe("The child's model provider (default: yours).")
      shape.model = z
        .string()
        .min(1)
        .optional()
        .describe("The child's model id (default: yours); see list_subagent_models.")
      shape.reasoning_effort = z.enum(REASONING_EFFORTS).optional().describe("The child's reasoning effort.")
    }
    return z.object(shape) as unknown as z.ZodObject<{ [K in keyof TaskArgs]-?: z.ZodType<TaskArgs[K]> }>
  },
)

/** The subagent tool's parameters for `config`, with `run_in_background` when background runs are on. */
function taskParametersFor(config: SubagentConfig, background: boolean) {
  const names = Object.keys(config.types)
  const several = names.length > 1
  return taskParameters(
    several ? names.join(',') : '',
    several ? config.defaultType : '',
    background,
    config.modelSelection,
  )
}
const defaults = Config()
taskParametersFor(defaults, defaults.enableRunInBackground)

/** The `subagent` tool; `children` maps each live child session to its type, for the system prompt. */
export function taskTool(
  ctx: Context,
  config: SubagentConfig,
  children: Map<string, AgentType>,
  background: BackgroundChildren | undefined,
) {
  const names = Object.keys(config.types) as [string, ...string[]]
  const catalog =
    names.length > 1
      ? `\nSubagent types:\n${names.map((name) => `- ${name}: ${config.types[name]?.description}`).join('\n')}`
      : ''
  const parameters = taskParametersFor(config, background !== undefined)
  const backgroundText = background
    ? ' With run_in_background: true the call returns the agent id at once and the subagent works on; its result reaches you as a ' +
      'message when it finishes (do not poll). list_agents, send_message and interrupt_agent manage background subagents.'
    : ''
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
      `in one reply run at the same time. Subagents cannot ask the user anything or get approvals.${backgroundText}${catalog}`,
    parameters,
    timeoutMs: config.timeoutMs,
    isConcurrencySafe: () => true,
    // The child's own calls are each checked against its preset (the parent's); starting it touches nothing.
    access: (args) => ({ kind: 'read', summary: `subagent task "${args.description}"` }),
    execute: (args, run) =>
      args.run_in_background && background
        ? background.start(args, run, () => startChild(ctx, config, children, args, run))
        : runChild(ctx, config, children, args, run),
  })
}

/** Creates the child session and agent, limits its tools and gives it the parent's permissions (never more). */
export async function startChild(
  ctx: Context,
  config: SubagentConfig,
  children: Map<string, AgentType>,
  args: TaskArgs,
  run: ToolRunContext,
): Promise<StartedChild> {
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
  const options: Partial<AgentOptions> = { ...parent?.options, ...(type.model ? { model: type.model } : {}) }
  Object.assign(options, chosenModel(ctx, args))
  const child = await ctx.agents.create({
    cwd: run.cwd,
    parentSession: run.sessionId as SessionId,
    title: args.description,
    options,
  })
  children.set(child.id, type)
  const unrestrict = ctx.tools.restrict(ctx, child.id, toolFilter(type, depth < config.maxDepth))
  inheritPermissions(ctx, run.sessionId, child.id)
  return {
    agent: child,
    type: typeName,
    release: () => {
      unrestrict()
      children.delete(child.id)
    },
  }
}

/**
 * Gives a child its parent's preset and network setting (both logged in the child's session), never more:
 * a parent that turned the network off must not get it back through a child.
 */
export function inheritPermissions(ctx: Context, parent: string, child: string): void {
  const permission = ctx.get('permission')
  if (!permission) return
  permission.setPreset(child, permission.preset(parent))
  permission.setNetwork(child, permission.network(parent))
}

/** The model settings the call asked for (modelSelection), checked against the registered providers. */
function chosenModel(ctx: Context, args: TaskArgs): Partial<AgentOptions> {
  const out: Partial<AgentOptions> = {}
  if (args.provider !== undefined) {
    const routes = ctx.get('llm')?.listRoutes() ?? []
    if (!routes.includes(args.provider))
      throw new ToolError(
        'UNKNOWN_PROVIDER',
        `there is no model provider "${args.provider}"; known: ${routes.join(', ') || 'none'} (see list_subagent_models)`,
      )
    out.provider = args.provider
  }
  if (args.model !== undefined) out.model = args.model
  if (args.reasoning_effort !== undefined) out.reasoningEffort = args.reasoning_effort
  return out
}

async function runChild(
  ctx: Context,
  config: SubagentConfig,
  children: Map<string, AgentType>,
  args: TaskArgs,
  run: ToolRunContext,
): Promise<ToolOutput> {
  const started = await startChild(ctx, config, children, args, run)
  const child = started.agent
  const cancel = () => child.cancel('parent')
  try {
    run.signal.addEventListener('abort', cancel, { once: true })
    if (run.signal.aborted) return outcome(child)
    child.followup(args.prompt)
    await child.whenIdle()
    return outcome(child)
  } finally {
    run.signal.removeEventListener('abort', cancel)
    await ctx.agents.dispose(child)
    started.release()
  }
}

/** The text of the child's last non-empty reply, if any. */
export function lastAnswer(child: Agent): string {
  const replies = child.session.events.filter(
    (e): e is SessionEvent<'assistant/message'> => e.type === 'assistant/message',
  )
  return replies.map((e) => textOf(e.data.message.content).trim()).findLast((text) => text.length > 0) ?? ''
}

/** The child's final answer, or an error result carrying the code of what stopped it. */
export function outcome(child: Agent): ToolOutput {
  const meta = { sessionId: child.id }
  const end = child.session.last('turn/end')
  const answer = lastAnswer(child)
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
