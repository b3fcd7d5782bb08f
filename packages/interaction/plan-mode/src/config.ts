import { Schema, stringList } from '@dsh/cordis'
import type { ToolAccess } from '@dsh/tools'

export interface PlanModeConfig {
  startInPlanMode: boolean
  allowedAccess: Array<ToolAccess['kind']>
  allowedTools: string[]
  section: string
  order: number
}

export const DEFAULT_SECTION = [
  '# Plan mode',
  'You are in plan mode: explore and think, but change nothing yet. Only read-only tools run (reading, listing and searching files); writes, edits and commands are refused.',
  'When you know what to do, call exit_plan_mode with the complete plan in markdown, starting with a # heading that names it. The user reviews it: once they approve, plan mode ends and you carry out the plan. If they ask for changes, revise the plan and submit it again.',
].join('\n\n')

export const Config: Schema<PlanModeConfig> = Schema.object({
  startInPlanMode: Schema.boolean().default(false).description('New sessions start in plan mode.'),
  allowedAccess: Schema.array(Schema.union(['read', 'write', 'execute', 'network', 'other'] as const))
    .default(['read', 'network'])
    .description(
      "The kinds of tool access (a tool's access(args)) that still run in plan mode. The permission preset applies to them as usual.",
    ),
  allowedTools: stringList(
    'Tools that run in plan mode whatever their access, e.g. a subagent tool (its children are held to plan mode too).',
  ),
  section: Schema.string()
    .default(DEFAULT_SECTION)
    .description('The system-prompt section shown while a session is in plan mode.'),
  order: Schema.number()
    .default(900)
    .description('Where the plan-mode section goes in the system prompt (lower comes first).'),
})
