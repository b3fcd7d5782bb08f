import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { type Context as Ctx, Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import { type Session, SessionStore } from '@dsh/session'
import {
  type ApprovalBroker,
  defineTool,
  type ToolCall,
  type ToolDefinition,
  type ToolResult,
  type ToolRunContext,
  ToolRuntime,
  untilAborted,
} from '@dsh/tools'
import { protectedProjectPaths } from '@dsh/sandbox'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import * as permission from '../src/index.ts'
import type { PermissionConfig, PermissionDecisionEvent, PermissionPreset } from '../src/index.ts'
import { readTool, writeTool } from './file-tools.ts'

// The temp dir is a writable root under workspace-write, so the test points
// TMPDIR at a folder of its own: "outside" then really is outside.
let base: string
let ws: string
let outside: string
let temp: string
const savedTmpdir = process.env.TMPDIR

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'dsh-permission-')))
  ws = path.join(base, 'ws')
  outside = path.join(base, 'outside')
  temp = path.join(base, 'tmp')
  for (const dir of [ws, outside, temp, path.join(ws, '.git'), path.join(base, 'shared')])
    await mkdir(dir, { recursive: true })
  await writeFile(path.join(ws, 'readme.txt'), 'inside')
  await writeFile(path.join(outside, 'secret.txt'), 'outside')
  await writeFile(path.join(ws, '.git', 'config'), '[core]')
  await symlink(outside, path.join(ws, 'escape'))
  process.env.TMPDIR = temp
})

afterAll(async () => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = savedTmpdir
  await rm(base, { recursive: true, force: true })
})

let root: Context
let session: Session
let counter = 0
const unique = (stem: string) => `${stem}-${++counter}.txt`

/** Stands in for bash: reports the sandbox policy it would run under. */
const runTool = defineTool({
  name: 'run_command',
  description: 'Run a command.',
  parameters: z.object({ command: z.string(), escalated: z.boolean().default(false) }),
  access: (args) => ({ kind: 'execute', escalated: args.escalated, summary: args.command }),
  execute: (args, run) => ({
    content: JSON.stringify(root.permission.sandboxPolicy(run, { escalated: args.escalated })),
  }),
})

/** A file under each protected path but .git: what a hostile model would plant to change the next run. */
const AGENT_CONFIG_FILES = [
  '.claude/settings.json',
  '.mcp.json',
  '.dsh/cordis.patch.yml',
  '.codex/config.toml',
  '.agents/skills/x/SKILL.md',
]

const fetchTool = defineTool({
  name: 'fetch_url',
  description: 'Fetch a URL.',
  parameters: z.object({ url: z.string() }),
  access: (args) => ({ kind: 'network', summary: args.url }),
  execute: () => ({ content: 'fetched' }),
})

/** A tool without parameters that answers `content`; `declares` is what it says about its access, if anything. */
function bareTool(name: string, description: string, content: string, declares: Partial<ToolDefinition> = {}) {
  return defineTool({ name, description, parameters: z.object({}), execute: () => ({ content }), ...declares })
}

const mysteryTool = bareTool('mystery', 'Declares nothing.', 'did something')
const peekTool = bareTool('peek', 'Read-only without access().', 'peeked', { readOnly: true })
const brokenTool = bareTool('broken', 'access() throws.', 'ran anyway', {
  access: () => {
    throw new Error('cannot tell')
  },
})
const scribbleTool = bareTool('scribble', 'Writes somewhere unsaid.', 'scribbled', {
  access: () => ({ kind: 'write' }),
})

const allTools = [readTool, writeTool, runTool, fetchTool, mysteryTool, peekTool, brokenTool, scribbleTool]

beforeEach(async () => {
  root = new Context()
  await root.plugin(ToolRuntime, {} as never)
  await root.plugin(SessionStore)
  await root.plugin({
    name: 'test-tools',
    inject: ['tools'],
    apply(ctx: Ctx) {
      for (const tool of allTools) ctx.tools.register(ctx, tool)
    },
  })
})

afterEach(async () => {
  await root.fiber.dispose()
})

async function boot(config: Partial<PermissionConfig> = {}) {
  const fiber = root.plugin(permission, config as PermissionConfig)
  await fiber
  session = root.sessions.create({ cwd: ws })
  return fiber
}

interface Asked {
  tool: string
  reason: string
}

type Answer = 'allow-once' | 'allow-session' | { kind: 'reject'; message?: string }
type Approver = (call: ToolCall, reason: string, run: ToolRunContext) => Promise<Answer>

/**
 * Mounts a stand-in for the conversation service's broker that answers every
 * request with `answer`, remembers "allow-session" scopes until told to
 * forget them, and records what it was asked.
 */
async function surface(answer: Answer | Approver) {
  const asked: Asked[] = []
  const allowed = new Set<string>()
  const broker: ApprovalBroker = {
    async approve({ call, reason, scope, run }, signal) {
      if (allowed.has(`${run.sessionId} ${scope}`)) return { allowed: true, answer: 'remembered' }
      asked.push({ tool: call.name, reason })
      let given: Answer
      try {
        given = await untilAborted(
          typeof answer === 'function' ? answer(call, reason, run) : Promise.resolve(answer),
          signal,
        )
      } catch (error) {
        if (signal.aborted) return { allowed: false, answer: 'cancelled', message: 'cancelled' }
        return { allowed: false, answer: 'failed', message: (error as Error).message }
      }
      if (typeof given === 'object')
        return { allowed: false, answer: 'reject', ...(given.message ? { message: given.message } : {}) }
      if (given === 'allow-session') allowed.add(`${run.sessionId} ${scope}`)
      return { allowed: true, answer: given }
    },
    canAsk: () => true,
    forget: (sessionId, prefix = '') => {
      for (const key of [...allowed]) if (key.startsWith(`${sessionId} ${prefix}`)) allowed.delete(key)
    },
  }
  const fiber = root.plugin({
    name: 'test-broker',
    inject: ['tools'],
    apply: (ctx: Ctx) => void ctx.tools.setBroker(ctx, broker),
  })
  await fiber
  return { asked, fiber }
}

function invoke(
  name: string,
  args: Record<string, unknown>,
  options: { sessionId?: string; signal?: AbortSignal } = {},
): Promise<ToolResult> {
  counter += 1
  return root.tools.execute(
    { callId: `call-${counter}` as ToolCallId, name, arguments: JSON.stringify(args) },
    {
      signal: options.signal ?? new AbortController().signal,
      cwd: ws,
      sessionId: options.sessionId ?? session.id,
      sessionState: new Map(),
    },
  )
}

function text(result: ToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : `<${block.type}>`)).join('\n')
}

function decisions(of: Session = session): PermissionDecisionEvent[] {
  return of.events
    .filter((event) => event.type === 'permission/decision')
    .map((event) => event.data as PermissionDecisionEvent)
}

type Expect = Record<PermissionPreset, 'in' | 'out'>

interface Case {
  what: string
  tool: string
  args: () => Promise<Record<string, unknown>>
  /** For writes: the file that exists afterwards only if the call ran. */
  file?: (args: Record<string, unknown>) => string
  expect: Expect
}

const fileOf = (args: Record<string, unknown>) => path.resolve(ws, String(args.path))
const all: Expect = { 'read-only': 'in', 'workspace-write': 'in', 'danger-full-access': 'in' }
const writable: Expect = { 'read-only': 'out', 'workspace-write': 'in', 'danger-full-access': 'in' }
const dangerOnly: Expect = { 'read-only': 'out', 'workspace-write': 'out', 'danger-full-access': 'in' }

const cases: Case[] = [
  { what: 'a read inside the workspace', tool: 'read_file', args: async () => ({ path: 'readme.txt' }), expect: all },
  {
    what: 'a read outside the workspace',
    tool: 'read_file',
    args: async () => ({ path: path.join(outside, 'secret.txt') }),
    expect: all,
  },
  {
    what: 'a write inside the workspace',
    tool: 'write_file',
    args: async () => ({ path: unique('inside') }),
    file: fileOf,
    expect: writable,
  },
  {
    what: "a write in the session's temp folder",
    tool: 'write_file',
    args: async () => ({ path: path.join(root.permission.sessionTemp(session.id), unique('temp')) }),
    file: fileOf,
    expect: writable,
  },
  {
    what: 'a write in the shared temp dir',
    tool: 'write_file',
    args: async () => ({ path: path.join(temp, unique('temp')) }),
    file: fileOf,
    expect: dangerOnly,
  },
  {
    what: 'a write outside the workspace',
    tool: 'write_file',
    args: async () => ({ path: path.join(outside, unique('out')) }),
    file: fileOf,
    expect: dangerOnly,
  },
  {
    what: 'a write through a symlink leaving the workspace',
    tool: 'write_file',
    args: async () => ({ path: path.join('escape', unique('link')) }),
    file: fileOf,
    expect: dangerOnly,
  },
  {
    what: 'a write through a dangling symlink pointing outside',
    tool: 'write_file',
    args: async () => {
      const target = path.join(outside, unique('dangling-target'))
      const link = unique('dangling')
      await symlink(target, path.join(ws, link))
      return { path: link, target }
    },
    file: (args) => String(args.target),
    expect: dangerOnly,
  },
  {
    what: 'a write into .git',
    tool: 'write_file',
    args: async () => ({ path: path.join('.git', unique('hook')) }),
    file: fileOf,
    expect: dangerOnly,
  },
  { what: 'a plain command', tool: 'run_command', args: async () => ({ command: 'ls' }), expect: all },
  {
    what: 'an escalated command',
    tool: 'run_command',
    args: async () => ({ command: 'curl example.com', escalated: true }),
    expect: dangerOnly,
  },
  { what: 'a network call', tool: 'fetch_url', args: async () => ({ url: 'https://example.com' }), expect: dangerOnly },
  { what: 'a tool declaring nothing', tool: 'mystery', args: async () => ({}), expect: writable },
  { what: 'a readOnly tool without access()', tool: 'peek', args: async () => ({}), expect: all },
  { what: 'a write that names no path', tool: 'scribble', args: async () => ({}), expect: dangerOnly },
  { what: 'a tool whose access() throws', tool: 'broken', args: async () => ({}), expect: dangerOnly },
]

const presets: PermissionPreset[] = ['read-only', 'workspace-write', 'danger-full-access']

/** Runs a case's call under `preset` and `approval`, with an approver that allows once. */
async function runCase(c: (typeof cases)[number], preset: PermissionPreset, approval: 'ask' | 'never') {
  await boot({ preset, approval })
  const { asked } = await surface('allow-once')
  const args = await c.args()
  const { target: _target, ...sent } = args
  return { asked, args, result: await invoke(c.tool, sent) }
}

describe.each(presets)('preset %s', (preset) => {
  describe('approval ask (the approver allows once)', () => {
    it.each(cases)('$what', async (c) => {
      const { asked, args, result } = await runCase(c, preset, 'ask')
      expect(result.isError, text(result)).toBe(false)
      if (c.file) expect(existsSync(c.file(args))).toBe(true)
      if (c.expect[preset] === 'out') {
        expect(asked).toHaveLength(1)
        expect(asked[0]?.tool).toBe(c.tool)
        expect(asked[0]?.reason).toContain(`tool "${c.tool}"`)
        expect(asked[0]?.reason).toContain(`preset "${preset}"`)
        expect(decisions()).toMatchObject([{ tool: c.tool, preset, decision: 'ask', answer: 'allow-once' }])
      } else {
        expect(asked).toEqual([])
        expect(decisions()).toEqual([])
      }
    })
  })

  describe('approval never', () => {
    it.each(cases)('$what', async (c) => {
      const { asked, args, result } = await runCase(c, preset, 'never')
      expect(asked).toEqual([])
      if (c.expect[preset] === 'out') {
        expect(result.isError).toBe(true)
        expect(result.error?.code).toBe('DENIED')
        expect(text(result)).toContain(`tool "${c.tool}"`)
        expect(text(result)).toContain(`preset "${preset}"`)
        expect(text(result)).toContain('The approval policy is "never"')
        if (c.file) expect(existsSync(c.file(args))).toBe(false)
        expect(decisions()).toMatchObject([{ tool: c.tool, preset, decision: 'deny' }])
        expect(decisions()[0]?.answer).toBeUndefined()
      } else {
        expect(result.isError, text(result)).toBe(false)
        if (c.file) expect(existsSync(c.file(args))).toBe(true)
        expect(decisions()).toEqual([])
      }
    })
  })
})

describe('reasons', () => {
  it('name the tool, the path and the preset, and say what to do instead', async () => {
    await boot({ approval: 'never' })
    const target = path.join(outside, unique('named'))
    const result = await invoke('write_file', { path: target })
    const sessionTemp = root.permission.sessionTemp(session.id)
    expect(text(result)).toContain(
      `tool "write_file" would write ${target}, outside the folders preset "workspace-write" allows (${ws}, ${sessionTemp})`,
    )
    expect(text(result)).toContain(`Write inside the workspace (${ws}) or the temp dir (${sessionTemp}) instead`)
  })

  it('show where a symlink leads', async () => {
    await boot({ approval: 'never' })
    const name = unique('via-link')
    const result = await invoke('write_file', { path: path.join('escape', name) })
    expect(text(result)).toContain(`${path.join(ws, 'escape', name)} (which resolves to ${path.join(outside, name)})`)
  })

  it('name the command of an escalated call', async () => {
    await boot({ approval: 'never' })
    const result = await invoke('run_command', { command: 'curl example.com', escalated: true })
    expect(text(result)).toContain(
      'tool "run_command" asks to run "curl example.com" outside the sandbox, which preset "workspace-write" does not allow',
    )
  })

  it('name the protected paths, existing or not', async () => {
    await boot({ approval: 'never' })
    for (const target of ['.git/config', ...AGENT_CONFIG_FILES]) {
      const result = await invoke('write_file', { path: target })
      expect(text(result), target).toContain(
        `would write ${path.join(ws, target)}, inside the protected path ${path.join(ws, target.split('/')[0] as string)} (.git, .dsh, .claude, .codex, .agents, .mcp.json`,
      )
    }
  })

  it('protect the git dir that a .git file names, and its common dir', async () => {
    await boot({ approval: 'never' })
    const gitDir = path.join(base, 'main-repo', '.git', 'worktrees', 'ws')
    await mkdir(gitDir, { recursive: true })
    await writeFile(path.join(gitDir, 'commondir'), '../..\n')
    await rm(path.join(ws, '.git'), { recursive: true, force: true })
    await writeFile(path.join(ws, '.git'), `gitdir: ${gitDir}\n`)
    const policy = root.permission.sandboxPolicy({ sessionId: session.id, cwd: ws })
    expect(policy.protectedPaths).toEqual(
      expect.arrayContaining([path.join(ws, '.git'), gitDir, path.join(base, 'main-repo', '.git')]),
    )
  })
})

describe('protected project paths', () => {
  it('refuse .dsh, .claude, .codex, .agents and .mcp.json whether or not they exist, and a symlink planted in their place', async () => {
    await boot({ approval: 'never' })
    for (const target of AGENT_CONFIG_FILES) {
      const result = await invoke('write_file', { path: target })
      expect(result.error?.code).toBe('DENIED')
      expect(text(result)).toContain(`inside the protected path ${path.join(ws, target.split('/')[0] as string)}`)
      expect(existsSync(path.join(ws, target))).toBe(false)
    }
    const decoy = path.join(ws, 'decoy')
    await mkdir(decoy)
    await symlink('decoy', path.join(ws, '.claude'))
    try {
      expect((await invoke('write_file', { path: '.claude/settings.json' })).error?.code).toBe('DENIED')
      expect(existsSync(path.join(decoy, 'settings.json'))).toBe(false)
    } finally {
      await rm(path.join(ws, '.claude'))
      await rm(decoy, { recursive: true })
    }
  })

  it('include the real git folder a .git file points to', async () => {
    const worktree = path.join(base, 'worktree')
    await mkdir(worktree, { recursive: true })
    await writeFile(path.join(worktree, '.git'), 'gitdir: ../shared\n')
    expect(permission.protectedProjectPaths(worktree)).toEqual([
      ...['.git', '.dsh', '.claude', '.codex', '.agents', '.mcp.json'].map((name) => path.join(worktree, name)),
      path.join(base, 'shared'),
    ])
  })
})

describe('approver answers', () => {
  it('allow-session is remembered for this kind of action in this session only', async () => {
    await boot()
    const { asked } = await surface('allow-session')
    const first = path.join(outside, unique('session-1'))
    const second = path.join(outside, unique('session-2'))
    expect((await invoke('write_file', { path: first })).isError).toBe(false)
    expect((await invoke('write_file', { path: second })).isError).toBe(false)
    expect(existsSync(second)).toBe(true)
    expect(asked).toHaveLength(1)
    expect(decisions().map((d) => [d.decision, d.answer])).toEqual([
      ['ask', 'allow-session'],
      ['allow', undefined],
    ])

    // Another kind of action is asked again.
    await invoke('run_command', { command: 'curl example.com', escalated: true })
    expect(asked).toHaveLength(2)

    // So is the same action in another session.
    const other = root.sessions.create({ cwd: ws })
    await invoke('write_file', { path: path.join(outside, unique('session-3')) }, { sessionId: other.id })
    expect(asked).toHaveLength(3)
  })

  it('allow-session is forgotten when the session changes preset', async () => {
    await boot()
    const { asked } = await surface('allow-session')
    await invoke('write_file', { path: path.join(outside, unique('forget-1')) })
    root.permission.setPreset(session.id, 'workspace-write')
    await invoke('write_file', { path: path.join(outside, unique('forget-2')) })
    expect(asked).toHaveLength(2)
  })

  it('reject with a message: the model sees the message in the error result', async () => {
    await boot()
    const { asked } = await surface({ kind: 'reject', message: 'use the workspace instead' })
    const target = path.join(outside, unique('rejected'))
    const result = await invoke('write_file', { path: target })
    expect(asked).toHaveLength(1)
    expect(result.isError).toBe(true)
    expect(result.error?.code).toBe('DENIED')
    expect(text(result)).toContain('The user rejected this call. The user said: use the workspace instead')
    expect(existsSync(target)).toBe(false)
    expect(decisions()).toMatchObject([
      { decision: 'ask', answer: 'reject', tool: 'write_file', preset: 'workspace-write' },
    ])
  })

  it('reject without a message is asked again next time', async () => {
    await boot()
    const { asked } = await surface({ kind: 'reject' })
    const result = await invoke('write_file', { path: path.join(outside, unique('rejected')) })
    expect(text(result)).toContain('The user rejected this call.')
    expect(text(result)).not.toContain('The user said')
    await invoke('write_file', { path: path.join(outside, unique('rejected')) })
    expect(asked).toHaveLength(2)
  })

  it('a failing approver denies the call', async () => {
    await boot()
    await surface(() => Promise.reject(new Error('dialog crashed')))
    const target = path.join(outside, unique('crash'))
    const result = await invoke('write_file', { path: target })
    expect(result.error?.code).toBe('DENIED')
    expect(text(result)).toContain('Asking for approval failed (dialog crashed)')
    expect(existsSync(target)).toBe(false)
    expect(decisions()).toMatchObject([{ decision: 'ask' }])
    expect(decisions()[0]?.answer).toBeUndefined()
  })

  it('a call cancelled while waiting for approval does not run', async () => {
    await boot()
    const controller = new AbortController()
    await surface(() => {
      controller.abort()
      return new Promise<Answer>(() => {})
    })
    const target = path.join(outside, unique('cancelled'))
    const result = await invoke('write_file', { path: target }, { signal: controller.signal })
    expect(result.isError).toBe(true)
    expect(text(result)).toContain('cancelled while waiting for approval')
    expect(existsSync(target)).toBe(false)
  })

  it('the approver receives the call, the reason and the run', async () => {
    await boot()
    const seen: { callId: string; sessionId: string; cwd: string }[] = []
    await surface((call, _reason, run) => {
      seen.push({ callId: call.callId, sessionId: run.sessionId, cwd: run.cwd })
      return Promise.resolve('allow-once')
    })
    await invoke('write_file', { path: path.join(outside, unique('seen')) })
    expect(seen).toEqual([{ callId: `call-${counter}`, sessionId: session.id, cwd: ws }])
    expect(decisions()[0]?.callId).toBe(`call-${counter}`)
  })
})

describe('no approver (headless)', () => {
  it('denies a call outside the preset and tells the model why and what it can do', async () => {
    await boot()
    const target = path.join(outside, unique('headless'))
    const result = await invoke('write_file', { path: target })
    expect(result.isError).toBe(true)
    expect(result.error?.code).toBe('DENIED')
    expect(text(result)).toContain(`tool "write_file" would write ${target}`)
    expect(text(result)).toContain('no one is available to approve it')
    expect(text(result)).toContain(`Write inside the workspace (${ws})`)
    expect(existsSync(target)).toBe(false)
    expect(decisions()).toMatchObject([
      { decision: 'ask', answer: 'no-approver', tool: 'write_file', preset: 'workspace-write' },
    ])
  })

  it('still runs calls inside the preset', async () => {
    await boot()
    const name = unique('headless-inside')
    const result = await invoke('write_file', { path: name })
    expect(result.isError).toBe(false)
    expect(existsSync(path.join(ws, name))).toBe(true)
  })
})

/** Another pre-execute listener (a hook) that asks about every `peek` call. */
async function hookAskingForPeek() {
  await root.plugin({
    name: 'test-hook',
    apply(ctx: Ctx) {
      ctx.on('tools/pre-execute', async (execution, next) =>
        execution.tool.name === 'peek' ? { kind: 'ask', reason: 'the hook wants a look' } : next(),
      )
    },
  })
}

describe('subagents (sessions with a parent)', () => {
  it('are denied what needs approval without asking, even with an approver present', async () => {
    await boot()
    const { asked } = await surface('allow-once')
    const child = root.sessions.create({ cwd: ws, parentSession: session.id })
    const target = path.join(outside, unique('child'))
    const result = await invoke('write_file', { path: target }, { sessionId: child.id })
    expect(result.error?.code).toBe('DENIED')
    expect(text(result)).toContain(`tool "write_file" would write ${target}`)
    expect(text(result)).toContain('subagents cannot ask for approval')
    expect(asked).toEqual([])
    expect(existsSync(target)).toBe(false)
    expect(decisions(child)).toMatchObject([{ decision: 'deny', tool: 'write_file' }])
    expect(decisions()).toEqual([])
  })

  it('still run calls inside the preset', async () => {
    await boot()
    const { asked } = await surface('allow-once')
    const child = root.sessions.create({ cwd: ws, parentSession: session.id })
    const name = unique('child-inside')
    expect((await invoke('write_file', { path: name }, { sessionId: child.id })).isError).toBe(false)
    expect(existsSync(path.join(ws, name))).toBe(true)
    expect(asked).toEqual([])
  })
})

describe('the decision log', () => {
  it('logs only calls outside the preset, in call order, as ignorable events', async () => {
    await boot()
    await surface('allow-once')
    await invoke('read_file', { path: 'readme.txt' })
    await invoke('write_file', { path: unique('logged-inside') })
    await invoke('write_file', { path: path.join(outside, unique('logged-out')) })
    await invoke('run_command', { command: 'ls' })
    await invoke('run_command', { command: 'sudo ls', escalated: true })
    const events = session.events.filter((event) => event.type === 'permission/decision')
    expect(events.map((event) => (event.data as PermissionDecisionEvent).tool)).toEqual(['write_file', 'run_command'])
    expect(events.every((event) => event.ignorable === true)).toBe(true)
    const [write, run] = events.map((event) => event.data as PermissionDecisionEvent)
    expect(write?.reason).toContain('would write')
    expect(run?.reason).toContain('"sudo ls"')
  })

  it('the event type is registered while the plugin is loaded', async () => {
    const fiber = await boot()
    expect(root.sessions.isKnownType('permission/decision')).toBe(true)
    await fiber.dispose()
    expect(root.sessions.isKnownType('permission/decision')).toBe(false)
  })

  it('a call from a session that is not open is still decided', async () => {
    await boot({ approval: 'never' })
    const result = await invoke(
      'write_file',
      { path: path.join(outside, unique('ghost')) },
      { sessionId: 'session-ghost' },
    )
    expect(result.error?.code).toBe('DENIED')
  })
})

describe('per-session preset', () => {
  it('overrides the configured preset for one session', async () => {
    await boot()
    const { asked } = await surface('allow-once')
    const other = root.sessions.create({ cwd: ws })
    root.permission.setPreset(session.id, 'read-only')
    expect(root.permission.preset(session.id)).toBe('read-only')
    expect(root.permission.preset(other.id)).toBe('workspace-write')

    await invoke('write_file', { path: unique('override') })
    expect(asked).toHaveLength(1)
    expect(asked[0]?.reason).toContain('preset "read-only" allows no writes')
    expect(decisions()).toMatchObject([{ preset: 'read-only' }])

    await invoke('write_file', { path: unique('override') }, { sessionId: other.id })
    expect(asked).toHaveLength(1)

    root.permission.resetPreset(session.id)
    expect(root.permission.preset(session.id)).toBe('workspace-write')
    await invoke('write_file', { path: unique('override') })
    expect(asked).toHaveLength(1)
  })

  it('danger-full-access for one session lets its calls through', async () => {
    await boot({ approval: 'never' })
    root.permission.setPreset(session.id, 'danger-full-access')
    const target = path.join(outside, unique('danger'))
    expect((await invoke('write_file', { path: target })).isError).toBe(false)
    expect(existsSync(target)).toBe(true)
    expect(decisions()).toEqual([])
  })

  it('ends with the session', async () => {
    await boot()
    root.permission.setPreset(session.id, 'read-only')
    await root.sessions.close(session)
    expect(root.permission.preset(session.id)).toBe('workspace-write')
  })

  it('logs a session preset, so that the session has it again when resumed', async () => {
    await boot()
    root.permission.setPreset(session.id, 'read-only')
    root.permission.setPreset(session.id, 'read-only') // no change: not logged again
    root.permission.setPreset(session.id, 'danger-full-access')
    const logged = () => session.events.filter((e) => e.type === 'permission/preset').map((e) => e.data)
    expect(logged()).toEqual([{ preset: 'read-only' }, { preset: 'danger-full-access' }])
    const events = [...session.events]
    await root.sessions.close(session)
    const resumed = root.sessions.create({
      id: session.id,
      cwd: ws,
      createdAt: session.meta.createdAt,
      seed: events,
      seedStored: true,
    })
    expect(root.permission.preset(resumed.id)).toBe('danger-full-access')
    root.permission.resetPreset(resumed.id)
    expect(resumed.last('permission/preset')?.data).toEqual({ preset: null })
    expect(root.permission.preset(resumed.id)).toBe('workspace-write')
  })

  it('refuses an unknown preset', async () => {
    await boot()
    expect(() => root.permission.setPreset(session.id, 'yolo' as PermissionPreset)).toThrow(
      /unknown permission preset "yolo"/,
    )
  })
})

describe('sandboxPolicy', () => {
  const run = () => ({ sessionId: session.id, cwd: ws })

  it('workspace-write: the workspace and the temp dir, .git protected, no network', async () => {
    await boot()
    const sessionTemp = root.permission.sessionTemp(session.id)
    expect(root.permission.sandboxPolicy(run())).toEqual({
      mode: 'workspace-write',
      writableRoots: [ws, sessionTemp],
      protectedPaths: protectedProjectPaths(ws),
      // proxy is the default, but without the sandbox network service it falls back to off.
      network: 'off',
      tempDir: sessionTemp,
    })
    expect(sessionTemp.startsWith(temp)).toBe(true)
    expect((await stat(sessionTemp)).mode & 0o777).toBe(0o700)
  })

  it('workspace-write with extra roots and the network on', async () => {
    await boot({ extraWritableRoots: ['../shared'], network: { 'read-only': 'off', 'workspace-write': 'on' } })
    const sessionTemp = root.permission.sessionTemp(session.id)
    expect(root.permission.sandboxPolicy(run())).toEqual({
      mode: 'workspace-write',
      writableRoots: [ws, sessionTemp, path.join(base, 'shared')],
      protectedPaths: [...protectedProjectPaths(ws), ...protectedProjectPaths(path.join(base, 'shared'))],
      network: 'on',
      tempDir: sessionTemp,
    })
    // The extra root is writable without asking; the network is inside the preset.
    const { asked } = await surface('allow-once')
    await invoke('write_file', { path: path.join(base, 'shared', unique('extra')) })
    await invoke('fetch_url', { url: 'https://example.com' })
    expect(asked).toEqual([])
  })

  it('read-only: confined read-only', async () => {
    await boot({ preset: 'read-only' })
    expect(root.permission.sandboxPolicy(run())).toEqual({
      mode: 'read-only',
      writableRoots: [],
      protectedPaths: [],
      network: 'off',
    })
  })

  it('danger-full-access: off', async () => {
    await boot({ preset: 'danger-full-access' })
    expect(root.permission.sandboxPolicy(run()).mode).toBe('off')
  })

  it('escalated and approved: off', async () => {
    await boot()
    expect(root.permission.sandboxPolicy(run(), { escalated: true }).mode).toBe('off')
    // The tool sees the same through its own run context once approved.
    await surface('allow-once')
    const approved = await invoke('run_command', { command: 'curl example.com', escalated: true })
    expect(JSON.parse(text(approved)).mode).toBe('off')
    const plain = await invoke('run_command', { command: 'ls' })
    expect(JSON.parse(text(plain)).mode).toBe('workspace-write')
  })

  it('follows the per-session preset', async () => {
    await boot()
    root.permission.setPreset(session.id, 'read-only')
    expect(root.permission.sandboxPolicy(run()).mode).toBe('read-only')
    expect(root.permission.sandboxPolicy({ sessionId: 'another', cwd: ws }).mode).toBe('workspace-write')
  })
})

describe('the tools approval slot', () => {
  it('asks from other pre-execute listeners reach the same approver', async () => {
    await boot()
    const { asked } = await surface('allow-once')
    await hookAskingForPeek()
    const result = await invoke('peek', {})
    expect(result.isError).toBe(false)
    expect(asked).toEqual([{ tool: 'peek', reason: 'the hook wants a look' }])
  })

  it('a listener cannot allow past the preset: permission runs first', async () => {
    await root.plugin({
      name: 'test-hook',
      apply(ctx: Ctx) {
        ctx.on('tools/pre-execute', async () => ({ kind: 'allow' }))
      },
    })
    await boot({ approval: 'never' })
    const result = await invoke('write_file', { path: path.join(outside, unique('hook-allow')) })
    expect(result.error?.code).toBe('DENIED')
  })

  it('an approved call still passes through later listeners, which may deny it', async () => {
    await boot()
    await surface('allow-once')
    await root.plugin({
      name: 'test-hook',
      apply(ctx: Ctx) {
        ctx.on('tools/pre-execute', async () => ({ kind: 'deny', reason: 'the hook says no' }))
      },
    })
    const result = await invoke('write_file', { path: path.join(outside, unique('hook-deny')) })
    expect(text(result)).toContain('the hook says no')
  })
})

describe('disposal', () => {
  it('disposing the surface removes its approver', async () => {
    await boot()
    const { asked, fiber } = await surface('allow-once')
    await fiber.dispose()
    const result = await invoke('write_file', { path: path.join(outside, unique('gone')) })
    expect(asked).toEqual([])
    expect(text(result)).toContain('no one is available to approve it')
  })

  it('disposing the plugin removes its listener and its event type', async () => {
    const fiber = await boot({ approval: 'never' })
    await fiber.dispose()
    const target = path.join(outside, unique('unguarded'))
    expect((await invoke('write_file', { path: target })).isError).toBe(false)
    expect(existsSync(target)).toBe(true)
    expect(root.sessions.isKnownType('permission/decision')).toBe(false)
  })
})

describe('config', () => {
  it('defaults to workspace-write and ask, network off, no extra roots, no rules', () => {
    expect(permission.Config({} as never)).toEqual({
      preset: 'workspace-write',
      approval: 'ask',
      network: { 'read-only': 'off', 'workspace-write': 'proxy' },
      extraWritableRoots: [],
      allow: [],
      deny: [],
    })
  })

  it('refuses an unknown preset or policy', () => {
    expect(() => permission.Config({ preset: 'yolo' } as never)).toThrow()
    expect(() => permission.Config({ approval: 'sometimes' } as never)).toThrow()
  })
})
