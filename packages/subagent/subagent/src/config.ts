import { Schema, stringList, stringValue } from '@dsh/cordis'

/** One kind of subagent; with more than one configured, the model picks one with `subagent_type`. */
export interface AgentType {
  /** Shown to the model in the `subagent` tool description. */
  description: string
  /** The tools a child of this type may use. A trailing `*` matches a prefix (`mcp__github__*`); `*` alone matches every tool. */
  tools: string[]
  /** Tools taken away even when `tools` allows them; same patterns. */
  exclude: string[]
  /** Added to the child's system prompt, after `rolePrompt`. */
  prompt?: string
  /** The model the child uses; absent: the parent's. */
  model?: string
}

export interface SubagentConfig {
  /** How deep children may nest: 1 lets the top agent start children that cannot start their own. */
  maxDepth: number
  defaultType: string
  types: Record<string, AgentType>
  /** The longest a `subagent` call may run before the child is cancelled. */
  timeoutMs: number
  /** The system prompt section every child gets. */
  rolePrompt: string
  /** Offer `run_in_background` on the `subagent` tool, and the tools that steer background children. */
  enableRunInBackground: boolean
  /** How many background children of one session may be working at the same time. */
  maxConcurrentBackground: number
  /** Offer `provider`, `model` and `reasoning_effort` on the `subagent` tool (the seeds' default schema has none). */
  modelSelection: boolean
}

/** The name of the delegation tool, as the seeds' catalog spells it. */
export const SUBAGENT_TOOL = 'subagent'

const TYPE_NAME = /^[A-Za-z0-9_-]{1,64}$/

const AgentTypeSchema: Schema<AgentType> = Schema.object({
  description: Schema.string().required().description('What this kind of subagent is for; shown to the model.'),
  tools: stringList('Allow-list of tool names; a trailing * matches a prefix, and * alone (the default) every tool.', [
    '*',
  ]),
  exclude: stringList('Tool names (a trailing * matches a prefix) this type never gets.'),
  prompt: Schema.string().description("Added to the child's system prompt."),
  model: Schema.string().description("The model the child uses; the parent's when unset."),
})

export const Config: Schema<SubagentConfig> = Schema.object({
  maxDepth: Schema.natural()
    .min(1)
    .default(1)
    .description(
      'How deep subagents may nest. 1: the top agent may start subagents, which cannot start their own (they do not get the subagent tool).',
    ),
  defaultType: stringValue(
    'The type used when the model gives no subagent_type (the only one, when just one type is configured).',
    'general',
  ),
  types: Schema.dict(AgentTypeSchema)
    .default({
      general: {
        description:
          'A general-purpose agent for research, searching the code and multi-step work; it has the same tools as you.',
        tools: ['*'],
        exclude: ['ask_user_question', 'exit_plan_mode'],
      },
    })
    .description('The kinds of subagent, by name.'),
  timeoutMs: Schema.natural()
    .min(1)
    .default(1_800_000)
    .description('The longest one subagent call may run, in milliseconds; the child is cancelled after that.'),
  rolePrompt: Schema.string()
    .default(
      'You are a subagent: another agent gave you one task and is waiting for your result. Nobody can answer questions or approve actions for you; ' +
        'a call that needs approval is denied. Work on your own, then end with a final message that fully answers the task: it is passed back to the ' +
        'other agent as your result, and nothing else you wrote is.',
    )
    .description('The system prompt section every subagent gets.'),
  enableRunInBackground: Schema.boolean()
    .default(true)
    .description(
      'Offer run_in_background on the subagent tool, with list_agents, send_message and interrupt_agent to steer background children.',
    ),
  maxConcurrentBackground: Schema.natural()
    .min(1)
    .default(4)
    .description(
      'How many background subagents of one session may be working at once; starting or messaging one more is refused.',
    ),
  modelSelection: Schema.boolean()
    .default(false)
    .description(
      "Let the model pick each child's provider, model and reasoning effort on the subagent tool (list_subagent_models shows the choices).",
    ),
})

/** Checks what the schema cannot: names and the default type. Throws naming the field. */
export function checkConfig(config: SubagentConfig): void {
  const names = Object.keys(config.types)
  if (names.length === 0) throw new Error('subagent: config.types is empty; define at least one subagent type')
  for (const name of names) {
    if (!TYPE_NAME.test(name))
      throw new Error(`subagent: config.types."${name}": a type name must be 1 to 64 letters, digits, "_" or "-"`)
  }
  if (!Object.hasOwn(config.types, config.defaultType)) {
    throw new Error(
      `subagent: config.defaultType "${config.defaultType}" is not one of config.types (${names.join(', ')})`,
    )
  }
}

function matches(pattern: string, name: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern
}

/** The tools a child of `type` may use; `subagent` only while it may still nest. */
export function toolFilter(type: AgentType, mayNest: boolean): (name: string) => boolean {
  return (name) => {
    if (name === SUBAGENT_TOOL && !mayNest) return false
    if (!type.tools.some((pattern) => matches(pattern, name))) return false
    return !type.exclude.some((pattern) => matches(pattern, name))
  }
}
