import type {} from '@dsh/agent'
import { assertNever, type Context, Service } from '@dsh/cordis'
import { accessOf } from '@dsh/permission'
import type { Session } from '@dsh/session'
import type { PreToolDecision, ToolAccess, ToolExecution, ToolResult } from '@dsh/tools'
import type { PlanModeConfig } from './config.ts'

declare module '@dsh/cordis' {
  interface Context {
    planMode: PlanMode
  }
}

export const PLAN_EVENT = 'plan/mode'
export const EXIT_TOOL = 'exit_plan_mode'

/**
 * `ctx.planMode`: sessions that plan before they act. While a session is in
 * plan mode only read-only tools run; `exit_plan_mode` asks the surface's
 * approver to accept the plan. The state is the session's last `plan/mode`
 * event, so it survives resume and fork.
 */
export class PlanMode extends Service {
  static inject = ['tools', 'sessions']

  private readonly home: Context
  private readonly settings: PlanModeConfig

  constructor(ctx: Context, config: PlanModeConfig) {
    super(ctx, 'planMode')
    this.home = ctx
    this.settings = config
    ctx.sessions.registerEventType(ctx, PLAN_EVENT)
    ctx.on('tools/pre-execute', (execution, next) => this.guard(execution, next), { prepend: true })
    ctx.on('tools/post-execute', (execution, result, next) => this.explainRefusal(execution, result, next))
    ctx.on('agent/created', (agent) => {
      const { session } = agent
      if (!config.startInPlanMode || session.seedLength > 0 || session.meta.parentSession || session.last(PLAN_EVENT))
        return
      this.set(session, true)
    })
  }

  /**
   * Whether tools of this session are held to plan mode: its own state, or
   * that of the session it was started from (a subagent of a planning
   * session plans too).
   */
  isActive(sessionId: string): boolean {
    const seen = new Set<string>()
    let session = this.home.sessions.get(sessionId)
    while (session && !seen.has(session.id)) {
      if (session.last(PLAN_EVENT)?.data.active) return true
      seen.add(session.id)
      session = session.meta.parentSession ? this.home.sessions.get(session.meta.parentSession) : undefined
    }
    return false
  }

  /** Whether the session itself is in plan mode (not only the session that started it). */
  private plansItself(sessionId: string): boolean {
    return this.home.sessions.get(sessionId)?.last(PLAN_EVENT)?.data.active === true
  }

  /** Turns plan mode on or off for a session; logs `plan/mode` when that changes its state. */
  set(session: Session, active: boolean, plan?: string): void {
    const current = session.last(PLAN_EVENT)?.data.active === true
    if (current === active) return
    session.append(PLAN_EVENT, plan === undefined ? { active } : { active, plan }, { ignorable: true })
  }

  private async guard(execution: ToolExecution, next: () => Promise<PreToolDecision>): Promise<PreToolDecision> {
    const name = execution.tool.name
    if (!this.isActive(execution.run.sessionId)) return next()
    if (name === EXIT_TOOL) {
      if (this.plansItself(execution.run.sessionId)) {
        return {
          kind: 'ask',
          reason:
            'the agent has finished planning and asks you to approve its plan (in the call arguments) before it makes any change',
        }
      }
      return {
        kind: 'deny',
        reason:
          'this session plans because the session that started it is in plan mode, and only that session can leave it. Put your plan in your final answer instead.',
      }
    }
    if (this.settings.allowedTools.includes(name)) return next()
    const access = accessOf(execution)
    if (!('error' in access) && access.escalated !== true && this.settings.allowedAccess.includes(access.kind))
      return next()
    return {
      kind: 'deny',
      reason:
        `the session is in plan mode, where only read-only tools run, and tool "${name}" ${describeAccess(access)}. ` +
        `Do not retry it now: keep exploring with read-only tools, then submit your plan with ${EXIT_TOOL}; once the user approves it, you can make changes.`,
    }
  }

  /** An `exit_plan_mode` that was not approved: tell the model it is still planning. */
  private async explainRefusal(
    execution: ToolExecution,
    _result: ToolResult,
    next: () => Promise<ToolResult>,
  ): Promise<ToolResult> {
    const final = await next()
    if (
      execution.tool.name !== EXIT_TOOL ||
      final.error?.code !== 'DENIED' ||
      !this.plansItself(execution.run.sessionId)
    )
      return final
    const note =
      'The plan was not approved, so you are still in plan mode and only read-only tools run. ' +
      'If the user gave feedback, revise the plan and submit it again. If no one can approve plans here, end your turn with the plan as your answer.'
    return { ...final, content: [...final.content, { type: 'text', text: note }] }
  }
}

function describeAccess(access: ToolAccess | { error: string }): string {
  if ('error' in access) return `could not say what it would touch (${access.error})`
  const what = access.summary?.trim() ? ` (${access.summary.trim()})` : ''
  const paths = access.paths?.length ? ` ${access.paths.join(', ')}` : ''
  if (access.escalated === true) return `asks to leave the sandbox${what}`
  switch (access.kind) {
    case 'write':
      return `would write${paths}${what}`
    case 'execute':
      return `would run a command${what}`
    case 'network':
      return `would use the network${what}`
    case 'read':
      return `would read${paths}${what}`
    case 'other':
      return 'does not declare what it touches, so it cannot count as read-only'
    default:
      return assertNever(access.kind, 'tool access kind')
  }
}
