import type { Context } from '@dsh/cordis'
import { defineTool, oneLine, textArgument, ToolError, toolParameters } from '@dsh/tools'
import { z } from 'zod'
import type { PlanModeConfig } from './config.ts'
import { EXIT_TOOL, PlanMode } from './service.ts'

export { Config, DEFAULT_SECTION, type PlanModeConfig } from './config.ts'
export { EXIT_TOOL, PLAN_EVENT, PlanMode } from './service.ts'

export const name = 'plan-mode'
export const inject = ['tools', 'sessions', 'systemPrompt']

const exitPlanParameters = toolParameters(
  z.object({
    plan: z.string().trim().min(1).describe('The complete plan, as markdown, starting with a # heading.'),
  }),
)

/** Provides `ctx.planMode`, its system-prompt section and the `exit_plan_mode` tool. */
export function apply(ctx: Context, config: PlanModeConfig) {
  ctx.plugin(PlanMode, config)

  ctx.systemPrompt.section(ctx, {
    name: 'plan:mode',
    order: config.order,
    text: (target) => (ctx.get('planMode')?.isActive(target.sessionId) ? config.section : undefined),
    refresh: (target) => (ctx.get('planMode')?.isActive(target.sessionId) ? 'on' : 'off'),
    reason: 'plan mode switched',
  })

  ctx.tools.register(
    ctx,
    defineTool({
      name: EXIT_TOOL,
      presentation: {
        kind: 'switch_mode',
        view: 'generic',
        title: (args) => {
          const heading = /^#+\s*(.+)$/m.exec(textArgument(args, 'plan') ?? '')?.[1]
          return heading ? `Submit the plan: ${oneLine(heading)}` : 'Submit the plan'
        },
      },
      description:
        'Only in plan mode: submit your plan for the user to approve. Send the complete plan as markdown, starting with a # heading that names it. ' +
        "Once approved, plan mode ends and you carry out the plan from your next step; otherwise the result carries the user's feedback: revise and submit again.",
      parameters: exitPlanParameters,
      readOnly: true,
      execute(args, run) {
        const planMode = ctx.get('planMode')
        const session = ctx.sessions.get(run.sessionId)
        if (!planMode || !session || !planMode.isActive(run.sessionId)) {
          throw new ToolError(
            'NOT_IN_PLAN_MODE',
            'this session is not in plan mode, so there is no plan to submit; go ahead with the task.',
          )
        }
        planMode.set(session, false, args.plan)
        return { content: 'The user approved your plan and plan mode is off. Carry out the plan now.' }
      },
    }),
  )
}
