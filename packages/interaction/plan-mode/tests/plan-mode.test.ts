import { existsSync } from 'node:fs'
import { mkdtemp, realpath, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import * as agentPlugin from '@dsh/agent'
import type { Agent } from '@dsh/agent'
import { type Context as Ctx, Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import * as permission from '@dsh/permission'
import type { PermissionConfig } from '@dsh/permission'
import { type Session, type SessionEvent, SessionStore } from '@dsh/session'
import * as systemPrompt from '@dsh/system-prompt'
import { type ApprovalVerdict, defineTool, textOf, type ToolCall, type ToolResult, ToolRuntime } from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { readTool, writeTool } from '../../permission/tests/file-tools.ts'
import * as planMode from '../src/index.ts'
import type { PlanModeConfig } from '../src/index.ts'

let workspace: string
let root: Context
let session: Session

const runTool = defineTool({
  name: 'run_command',
  description: 'Run a command.',
  parameters: z.object({ command: z.string() }),
  access: (args) => ({ kind: 'execute', summary: args.command }),
  execute: () => ({ content: 'ran' }),
})

/** A stand-in driver: the registry needs one to create agents, and these tests never run a turn. */
function stubAgent(ctx: Ctx, agentSession: Session, options: agentPlugin.AgentOptions): Agent {
  const idle = async () => {}
  return {
    id: agentSession.id,
    session: agentSession,
    ctx,
    status: 'idle',
    options,
    send() {},
    followup() {},
    steer() {},
    inject() {},
    cancel() {},
    whenIdle: idle,
    stop: idle,
  }
}

beforeEach(async () => {
  workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), 'dsh-plan-mode-')))
  root = new Context()
  await root.plugin(ToolRuntime, {} as never)
  await root.plugin(SessionStore)
  await root.plugin(systemPrompt, { persona: '', guidance: '', timeZone: '' })
  await root.plugin(permission, {} as PermissionConfig)
  await root.plugin(agentPlugin, {} as agentPlugin.AgentRegistryConfig)
  await root.plugin({
    name: 'test-tools',
    inject: ['tools', 'agents'],
    apply(ctx: Ctx) {
      for (const tool of [readTool, writeTool, runTool]) ctx.tools.register(ctx, tool)
      ctx.agents.setFactory(ctx, stubAgent)
    },
  })
  session = root.sessions.create({ cwd: workspace })
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(workspace, { recursive: true, force: true })
})

async function mount(config: Partial<PlanModeConfig> = {}) {
  const fiber = root.plugin(planMode, config as PlanModeConfig)
  await fiber
  return fiber
}

/** A stand-in for the conversation service's approval broker: `answer` decides each request. */
async function approver(answer: (call: Readonly<ToolCall>, reason: string) => Promise<ApprovalVerdict>) {
  const fiber = root.plugin({
    name: 'test-broker',
    inject: ['tools'],
    apply(ctx: Ctx) {
      ctx.tools.setBroker(ctx, {
        approve: (request) => answer(request.call, request.reason),
        canAsk: () => true,
        forget: () => {},
      })
    },
  })
  await fiber
  return fiber
}

let calls = 0
function call(name: string, args: Record<string, unknown>, on: Session = session): Promise<ToolResult> {
  return root.tools.execute(
    { callId: `call-${++calls}` as ToolCallId, name, arguments: JSON.stringify(args) },
    { signal: new AbortController().signal, cwd: on.meta.cwd, sessionId: on.id, sessionState: new Map() },
  )
}

const planEvents = (on: Session = session) =>
  on.events.filter((e): e is SessionEvent<'plan/mode'> => e.type === 'plan/mode').map((e) => e.data)
const render = (on: Session = session) =>
  root.systemPrompt.render({ sessionId: on.id, cwd: on.meta.cwd, model: 'm', provider: 'p' })
const plan = '# Add a greeting\n\n1. Write hello.txt.'

describe('plan mode', () => {
  it('lets reads run and denies writes and commands with a reason that says it is plan mode', async () => {
    await mount()
    root.planMode.set(session, true)
    expect(planEvents()).toEqual([{ active: true }])
    expect(root.planMode.isActive(session.id)).toBe(true)

    expect((await call('read_file', { path: 'a.txt' })).isError).toBe(false)
    const write = await call('write_file', { path: 'hello.txt' })
    expect(write.error?.code).toBe('DENIED')
    expect(textOf(write.content)).toBe(
      'Error: permission to run tool "write_file" was denied: the session is in plan mode, where only read-only tools run, and tool "write_file" would write hello.txt. ' +
        'Do not retry it now: keep exploring with read-only tools, then submit your plan with exit_plan_mode; once the user approves it, you can make changes.',
    )
    expect(existsSync(path.join(workspace, 'hello.txt'))).toBe(false)
    expect(textOf((await call('run_command', { command: 'make' })).content)).toContain(
      'tool "run_command" would run a command (make)',
    )
  })

  it('shows its section in the system prompt only while the session plans', async () => {
    await mount()
    expect(await render()).not.toContain('# Plan mode')
    root.planMode.set(session, true)
    expect(await render()).toContain('# Plan mode')
    root.planMode.set(session, false)
    expect(await render()).not.toContain('# Plan mode')
    expect(planEvents()).toEqual([{ active: true }, { active: false }])
  })

  it('logs plan/mode only on a change', async () => {
    await mount()
    root.planMode.set(session, false)
    root.planMode.set(session, true)
    root.planMode.set(session, true)
    expect(planEvents()).toEqual([{ active: true }])
  })

  it('exit_plan_mode with no approver (headless) is denied and the session keeps planning', async () => {
    await mount()
    root.planMode.set(session, true)
    const result = await call('exit_plan_mode', { plan })
    expect(result.error?.code).toBe('DENIED')
    const text = textOf(result.content)
    expect(text).toContain('no one is available to approve it here')
    expect(text).toContain('The plan was not approved, so you are still in plan mode')
    expect(root.planMode.isActive(session.id)).toBe(true)
    expect(planEvents()).toEqual([{ active: true }])
  })

  it('exit_plan_mode asks the approver; a rejection carries the user message and keeps plan mode', async () => {
    await mount()
    root.planMode.set(session, true)
    const asked: Array<{ name: string; reason: string; args: string }> = []
    await approver(async (toolCall, reason) => {
      asked.push({ name: toolCall.name, reason, args: toolCall.arguments })
      return { allowed: false, answer: 'reject', message: 'Also add a test.' }
    })
    const result = await call('exit_plan_mode', { plan })
    expect(asked).toEqual([
      { name: 'exit_plan_mode', reason: expect.stringContaining('approve its plan'), args: JSON.stringify({ plan }) },
    ])
    expect(result.error?.code).toBe('DENIED')
    expect(textOf(result.content)).toContain('The user said: Also add a test.')
    expect(textOf(result.content)).toContain('still in plan mode')
    expect(root.planMode.isActive(session.id)).toBe(true)
  })

  it('an approved plan turns plan mode off, logs the plan, and writes run again', async () => {
    await mount()
    root.planMode.set(session, true)
    const answers: string[] = []
    await approver(async () => {
      answers.push('allow-once')
      return { allowed: true, answer: 'allow-once' }
    })
    const result = await call('exit_plan_mode', { plan })
    expect(result.isError).toBe(false)
    expect(textOf(result.content)).toBe('The user approved your plan and plan mode is off. Carry out the plan now.')
    expect(planEvents()).toEqual([{ active: true }, { active: false, plan }])
    expect(root.planMode.isActive(session.id)).toBe(false)
    expect(await render()).not.toContain('# Plan mode')
    expect((await call('write_file', { path: 'hello.txt' })).isError).toBe(false)
    expect(existsSync(path.join(workspace, 'hello.txt'))).toBe(true)
    expect(answers).toEqual(['allow-once'])
  })

  it('exit_plan_mode outside plan mode is an error that says so, without asking anyone', async () => {
    await mount()
    let asked = 0
    await approver(async () => {
      asked++
      return { allowed: true, answer: 'allow-once' }
    })
    const result = await call('exit_plan_mode', { plan })
    expect(result.error?.code).toBe('NOT_IN_PLAN_MODE')
    expect(asked).toBe(0)
  })

  it('startInPlanMode puts new agents in plan mode, not resumed ones', async () => {
    await mount({ startInPlanMode: true })
    const agent = await root.agents.create({ cwd: workspace })
    expect(planEvents(agent.session)).toEqual([{ active: true }])
    expect(root.planMode.isActive(agent.id)).toBe(true)
    expect(await render(agent.session)).toContain('# Plan mode')

    const seeded = root.sessions.create({
      cwd: workspace,
      seed: [
        { seq: 0, time: 1, type: 'turn/start', data: { turn: 1 } },
        { seq: 1, time: 1, type: 'turn/end', data: { turn: 1, reason: 'completed' } },
      ],
    })
    root.emit('agent/created', stubAgent(root, seeded, { provider: 'p', model: 'm' }))
    expect(planEvents(seeded)).toEqual([])
  })

  it('takes the state back from the log on resume', async () => {
    await mount()
    const resumed = root.sessions.create({
      cwd: workspace,
      seed: [
        { seq: 0, time: 1, type: 'plan/mode', data: { active: true }, ignorable: true },
        { seq: 1, time: 1, type: 'turn/start', data: { turn: 1 } },
        { seq: 2, time: 1, type: 'turn/end', data: { turn: 1, reason: 'completed' } },
      ],
    })
    expect(root.planMode.isActive(resumed.id)).toBe(true)
    expect((await call('write_file', { path: 'x.txt' }, resumed)).error?.code).toBe('DENIED')
  })

  it("holds a subagent's session to its parent's plan mode; the child cannot leave it", async () => {
    await mount()
    root.planMode.set(session, true)
    const child = root.sessions.create({ cwd: workspace, parentSession: session.id })
    expect(root.planMode.isActive(child.id)).toBe(true)
    expect((await call('write_file', { path: 'x.txt' }, child)).error?.code).toBe('DENIED')
    let asked = 0
    await approver(async () => {
      asked++
      return { allowed: true, answer: 'allow-once' }
    })
    const result = await call('exit_plan_mode', { plan }, child)
    expect(result.error?.code).toBe('DENIED')
    expect(textOf(result.content)).toContain('only that session can leave it')
    expect(asked).toBe(0)
    expect(root.planMode.isActive(session.id)).toBe(true)
  })

  it('lets configured tools and access kinds through', async () => {
    await mount({ allowedTools: ['run_command'], allowedAccess: ['read'] })
    root.planMode.set(session, true)
    expect((await call('run_command', { command: 'ls' })).isError).toBe(false)
    expect((await call('write_file', { path: 'x.txt' })).error?.code).toBe('DENIED')
  })

  it('removes its listeners, section, tool and service with the plugin', async () => {
    const fiber = await mount()
    root.planMode.set(session, true)
    await fiber.dispose()
    expect(root.get('planMode')).toBeUndefined()
    expect(root.tools.get('exit_plan_mode')).toBeUndefined()
    expect(await render()).not.toContain('# Plan mode')
    expect((await call('write_file', { path: 'x.txt' })).isError).toBe(false)
    expect(root.sessions.isKnownType('plan/mode')).toBe(false)
  })
})
