import { access, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, type Fiber } from '@dsh/cordis'
import * as jobsPlugin from '@dsh/jobs'
import type { LocalJobsConfig } from '@dsh/jobs'
import * as jobToolsPlugin from '@dsh/jobs/tools'
import type { JobToolsConfig } from '@dsh/jobs/tools'
import type { ToolCallId } from '@dsh/llm'
import * as shellPlugin from '@dsh/shell'
import type { BashShellConfig, SandboxPolicy } from '@dsh/shell'
import * as tools from '@dsh/tools'
import type { ToolResult, ToolRunOptions, ToolsConfig } from '@dsh/tools'
import { LEAKY_ENVIRONMENT, withEnvironment } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { liveWithMarker } from '../../shell/tests/processes.ts'
// tool-bash does not depend on the lower seams; the test mounts their providers from the workspace.
import * as sandboxPlugin from '../../../sandbox/sandbox/src/index.ts'
import type { BwrapSandboxConfig } from '../../../sandbox/sandbox/src/index.ts'
import * as subprocessPlugin from '../../../subprocess/subprocess/src/index.ts'
import { isRunning, type LocalSubprocessConfig } from '../../../subprocess/subprocess/src/index.ts'
import * as bashTool from '../src/index.ts'
import type { BashToolConfig, PermissionPolicySource, SpillStore } from '../src/index.ts'

let root: Context
let dir: string
let outside: string
let calls = 0
const sessionStates = new Map<string, Map<string, unknown>>()

beforeEach(async () => {
  root = new Context()
  dir = await realpath(await mkdtemp(join(tmpdir(), 'dsh-tool-bash-')))
  await mkdir(join(dir, '.git'))
  outside = await realpath(await mkdtemp('/var/tmp/dsh-tool-bash-out-'))
  sessionStates.clear()
  await root.plugin(tools, {} as ToolsConfig)
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(dir, { recursive: true, force: true })
  await rm(outside, { recursive: true, force: true })
})

interface BootOptions {
  subprocess?: Partial<LocalSubprocessConfig>
  /** false: no sandbox service at all, so mode off runs the command as is (host pids). */
  sandbox?: Partial<BwrapSandboxConfig> | false
  jobs?: boolean
}

/** Mounts the whole pipeline: subprocess, sandbox, shell, then the tool. */
async function boot(config: Partial<BashToolConfig> = {}, options: BootOptions = {}) {
  const subprocess = root.plugin(subprocessPlugin, (options.subprocess ?? {}) as LocalSubprocessConfig)
  await subprocess
  if (options.sandbox !== false) await root.plugin(sandboxPlugin, (options.sandbox ?? {}) as BwrapSandboxConfig)
  await root.plugin(shellPlugin, {} as BashShellConfig)
  if (options.jobs) {
    await root.plugin(jobsPlugin, {} as LocalJobsConfig)
    await root.plugin(jobToolsPlugin, {} as JobToolsConfig)
  }
  const fiber = root.plugin(bashTool, config as BashToolConfig)
  await fiber
  return { fiber, subprocess }
}

/** The tool with the sandbox off: for tests that look at host pids (boot them with `bare`). */
const unconfined = { sandbox: { mode: 'off', network: 'on' } } as const
/** No sandbox service: mode off then runs commands without the PID namespace that would hide host pids. */
const bare = { sandbox: false } as const

/** Provides a plain-value service the way another plugin would. */
async function provide(name: string, value: unknown): Promise<Fiber> {
  const fiber = root.plugin({
    name: `fake-${name}`,
    apply: (ctx: Context) => void ctx.provide(name, value),
  })
  await fiber
  return fiber
}

function options(overrides: Partial<ToolRunOptions> = {}): ToolRunOptions {
  const sessionId = overrides.sessionId ?? 'bash-session'
  if (!sessionStates.has(sessionId)) sessionStates.set(sessionId, new Map())
  return {
    signal: new AbortController().signal,
    cwd: dir,
    sessionId,
    sessionState: sessionStates.get(sessionId)!,
    ...overrides,
  }
}

async function call(name: string, args: Record<string, unknown>, run: ToolRunOptions = options()): Promise<ToolResult> {
  calls += 1
  return root.tools.execute({ callId: `b${calls}` as ToolCallId, name, arguments: JSON.stringify(args) }, run)
}

/** A bash call; the seeds' schema requires a description, which these tests do not care about. */
const bash = (args: Record<string, unknown>, run?: ToolRunOptions) =>
  call('bash', { description: 'a test command', ...args }, run)

function text(result: ToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}

function pids(output: string): number[] {
  return output
    .split('\n')
    .filter((line) => /^\d+$/.test(line))
    .map(Number)
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

async function waitForFile(path: string): Promise<void> {
  while (!(await exists(path))) await new Promise((resolve) => setTimeout(resolve, 10))
}

describe('bash', () => {
  it('registers bash with a budget beyond its own longest timeout, and removes it when disposed', async () => {
    const { fiber } = await boot({ maxTimeoutMs: 1000, stopAllowanceMs: 500 })
    const tool = root.tools.get('bash')
    expect(tool?.timeoutMs).toBe(1500)
    expect(root.tools.isConcurrencySafe('bash', '{"command":"ls"}')).toBe(false)
    await fiber.dispose()
    expect(root.tools.get('bash')).toBeUndefined()
  })

  it('waits for ctx.shell', async () => {
    const fiber = root.plugin(bashTool, {} as BashToolConfig)
    expect(root.tools.get('bash')).toBeUndefined()
    await root.plugin(subprocessPlugin, {} as LocalSubprocessConfig)
    await root.plugin(shellPlugin, {} as BashShellConfig)
    await fiber
    expect(root.tools.get('bash')).toBeDefined()
  })

  it('says what a call would do: execute the command, escalated when asked', async () => {
    await boot()
    const tool = root.tools.get('bash')!
    expect(tool.access?.({ command: 'ls -la' })).toEqual({ kind: 'execute', summary: 'ls -la', command: 'ls -la' })
    expect(tool.access?.({ command: 'curl example.com', escalate: true, justification: 'needs the network' })).toEqual({
      kind: 'execute',
      escalated: true,
      summary: 'curl example.com',
      command: 'curl example.com',
    })
  })

  it('returns stdout and the exit code', async () => {
    await boot()
    const result = await bash({ command: 'echo hello; echo world', description: 'greet' })
    expect(result.isError).toBe(false)
    expect(text(result)).toBe('hello\nworld\n[exit code: 0]')
    expect(result.meta).toMatchObject({ exitCode: 0, signal: null, timedOut: false, sandbox: 'workspace-write' })
  })

  it('reports stderr and a non-zero exit without calling it an error', async () => {
    await boot()
    const result = await bash({ command: 'echo partial; echo "no such thing" >&2; exit 3' })
    expect(result.isError).toBe(false)
    expect(text(result)).toBe('partial\n[stderr]\nno such thing\n[exit code: 3]')
  })

  it('says when there is no output, and names a killing signal', async () => {
    await boot(unconfined, bare)
    expect(text(await bash({ command: 'true' }))).toBe('(no output)\n[exit code: 0]')
    expect(text(await bash({ command: 'kill -KILL $$' }))).toBe('(no output)\n[killed by signal: SIGKILL]')
  })

  it('runs in the session workspace', async () => {
    await boot()
    expect(text(await bash({ command: 'pwd' }))).toBe(`${dir}\n[exit code: 0]`)
    const missing = await bash({ command: 'pwd' }, options({ cwd: join(dir, 'missing') }))
    expect(missing.error?.code).toBe('BASH_BAD_CWD')
  })

  it('scrubs credential-like variables from the environment', async () => {
    await boot()
    const out = await withEnvironment({ ...LEAKY_ENVIRONMENT, PLAIN_SETTING: 'visible' }, async () =>
      text(await bash({ command: 'env' })),
    )
    expect(out).not.toMatch(/leak-/)
    expect(out).toContain('PLAIN_SETTING=visible')
    expect(out).toContain(`HOME=${process.env.HOME}`)
    expect(out).toContain('NO_COLOR=1')
  })

  it('keeps the tail of long output and says how much was dropped', async () => {
    await boot({ maxOutputBytes: 100 })
    const result = await bash({ command: 'seq 1 1000; seq 1 1000 >&2' })
    const out = text(result)
    // seq 1 1000 prints 3893 bytes.
    expect(out).toMatch(/^\[stdout truncated: the first 3793 bytes were dropped\]\n/)
    expect(out).toContain('\n998\n999\n1000\n[stderr]\n[stderr truncated: the first 3793 bytes were dropped]\n')
    expect(out).toMatch(/\n1000\n\[exit code: 0\]$/)
  })

  it('saves huge output through ctx.spill and gives the model the path', async () => {
    const saved: { sessionId: string; text: string; label: string }[] = []
    const spill: SpillStore = {
      async save(input) {
        saved.push(input)
        return { path: `/spill/${saved.length}.txt`, bytes: Buffer.byteLength(input.text) }
      },
    }
    await provide('spill', spill)
    await boot({ maxOutputBytes: 1000 })
    const result = await bash({ command: 'seq 1 200000; echo small >&2' }, options({ sessionId: 'spilling' }))
    const out = text(result)
    const full = Array.from({ length: 200_000 }, (_, i) => `${i + 1}\n`).join('')
    expect(saved).toHaveLength(1)
    expect(saved[0]).toMatchObject({ sessionId: 'spilling', label: 'bash-stdout' })
    expect(saved[0]!.text).toBe(full)
    expect(out).toMatch(
      new RegExp(
        `^\\[stdout truncated: the first ${Buffer.byteLength(full) - 1000} bytes were dropped; the full stdout is saved at /spill/1\\.txt \\(page through it with read\\)\\]\\n`,
      ),
    )
    expect(out).toMatch(/\n200000\n\[stderr\]\nsmall\n\[exit code: 0\]$/)
    expect(result.meta).toMatchObject({ stdoutPath: '/spill/1.txt' })
  })

  it('kills the whole process tree on timeout', async () => {
    await boot(unconfined, bare)
    const result = await bash({ command: 'sleep 1000 & echo $!; (sleep 1000 & echo $!; wait) & wait', timeoutMs: 1000 })
    expect(result.isError).toBe(true)
    expect(result.error?.code).toBe('BASH_TIMEOUT')
    const out = text(result)
    expect(out).toContain('[timed out after 1000ms; the command and its child processes were killed]')
    const children = pids(out)
    expect(children).toHaveLength(2)
    for (const pid of children) expect(await isRunning(pid)).toBe(false)
  })

  it('kills every sandboxed process on timeout', async () => {
    await boot()
    const tag = `dsh-bash-marker-${process.pid}-timeout`
    const result = await bash({
      command: `bash -c 'touch started; exec -a ${tag} sleep 1000' & until [ -e started ]; do sleep 0.01; done; touch ready; wait`,
      timeoutMs: 2000,
    })
    expect(result.error?.code).toBe('BASH_TIMEOUT')
    expect(await exists(join(dir, 'ready'))).toBe(true)
    expect(await liveWithMarker(tag)).toEqual([])
  })

  it('escalates to SIGKILL when the tree ignores SIGTERM', async () => {
    await boot(unconfined, { ...bare, subprocess: { killGraceMs: 100 } })
    const result = await bash({ command: 'trap "" TERM; sleep 1000 & echo $!; wait', timeoutMs: 200 })
    expect(text(result)).toContain('[timed out after 200ms')
    expect(text(result)).toContain('[killed by signal: SIGKILL]')
    for (const pid of pids(text(result))) expect(await isRunning(pid)).toBe(false)
  })

  it('kills the tree when the caller cancels', async () => {
    await boot(unconfined, bare)
    const caller = new AbortController()
    const pending = bash({ command: 'sleep 1000 & echo $! > child.pid; wait' }, options({ signal: caller.signal }))
    await waitForFile(join(dir, 'child.pid'))
    const child = Number((await readFile(join(dir, 'child.pid'), 'utf8')).trim())
    caller.abort()
    const result = await pending
    expect(result.error?.code).toBe('CANCELLED')
    expect(await isRunning(child)).toBe(false)
  })

  it('reports background processes left running; the subprocess provider stops them when disposed', async () => {
    const { subprocess } = await boot(unconfined, { ...bare, subprocess: { drainMs: 200 } })
    const result = await bash({ command: 'sleep 1000 >/dev/null 2>&1 & echo $!' })
    const [child] = pids(text(result))
    expect(text(result)).toContain('[exit code: 0]\n[background processes started by this command are still running;')
    expect(await isRunning(child!)).toBe(true)
    await subprocess.dispose()
    expect(await isRunning(child!)).toBe(false)
  })

  it('stops running commands when the tool plugin is disposed', async () => {
    const { fiber } = await boot(unconfined, bare)
    const pending = bash({ command: 'sleep 1000 & echo $! > child.pid; wait' })
    await waitForFile(join(dir, 'child.pid'))
    const child = Number((await readFile(join(dir, 'child.pid'), 'utf8')).trim())
    await fiber.dispose()
    expect(await isRunning(child)).toBe(false)
    await pending
  })

  it('refuses a timeout beyond the maximum', async () => {
    await boot({ maxTimeoutMs: 5000 })
    const result = await bash({ command: 'true', timeoutMs: 5001 })
    expect(result.error?.code).toBe('INVALID_ARGUMENTS')
    expect(text(result)).toContain('timeoutMs: timeoutMs may be at most 5000 milliseconds')
  })
})

describe('bash in the sandbox', () => {
  it('by default may write the workspace and the temp folder, but not .git or anything else', async () => {
    await boot()
    const inside = await bash({ command: 'echo hi > made.txt && cat made.txt' })
    expect(text(inside)).toBe('hi\n[exit code: 0]')
    expect(await exists(join(dir, 'made.txt'))).toBe(true)

    const git = await bash({ command: 'touch .git/config' })
    expect(text(git)).toMatch(
      /Read-only file system\n\[sandbox: a write was denied under the workspace-write sandbox; this is a policy decision: do not retry the write another way\]\n\[exit code: 1\]$/,
    )
    expect(await exists(join(dir, '.git', 'config'))).toBe(false)

    const away = await bash({ command: `touch ${outside}/escaped` })
    expect(text(away)).toContain('Read-only file system')
    expect(await exists(join(outside, 'escaped'))).toBe(false)
  })

  it('follows the configured mode: read-only, and off', async () => {
    await boot({ sandbox: { mode: 'read-only', network: 'off' } })
    const denied = await bash({ command: 'touch made.txt' })
    expect(text(denied)).toContain('[sandbox: a write was denied under the read-only sandbox;')
    expect(await exists(join(dir, 'made.txt'))).toBe(false)
    await root.fiber.dispose()
    await root.plugin(tools, {} as ToolsConfig)
    await boot(unconfined, bare)
    expect(text(await bash({ command: `touch ${outside}/free` }))).toBe('(no output)\n[exit code: 0]')
  })

  it('refuses to run a confined command when bwrap is missing', async () => {
    await boot({}, { sandbox: { bwrapPath: join(dir, 'no-bwrap') } })
    const result = await bash({ command: 'touch should-not-exist' })
    expect(result.isError).toBe(true)
    expect(result.error?.code).toBe('BASH_SANDBOX_REFUSED')
    expect(text(result)).toMatch(
      /^Error: the command needs the workspace-write sandbox, which is unavailable here \(bubblewrap \(bwrap\) was not found at/,
    )
    expect(await exists(join(dir, 'should-not-exist'))).toBe(false)
  })

  it('takes the policy from ctx.permission, and asks it for the escalated one when escalate is set', async () => {
    const asked: { run: { sessionId: string; cwd: string }; options?: { escalated?: boolean } }[] = []
    const permission: PermissionPolicySource = {
      sandboxPolicy(run, opts) {
        asked.push({ run, ...(opts ? { options: opts } : {}) })
        const mode = opts?.escalated ? 'off' : 'read-only'
        return { mode, writableRoots: [], protectedPaths: [], network: 'off' } satisfies SandboxPolicy
      },
    }
    await provide('permission', permission)
    await boot({ allowEscalation: true })
    const confined = await bash({ command: 'touch made.txt' })
    expect(text(confined)).toContain(
      '[sandbox: a write was denied under the read-only sandbox; if the command must write there, call bash again with escalate: true and a justification]',
    )
    expect(asked).toEqual([
      {
        run: { sessionId: 'bash-session', cwd: dir },
        options: {
          escalated: false,
          call: {
            call: expect.objectContaining({
              name: 'bash',
              arguments: '{"command":"touch made.txt","description":"a test command"}',
            }),
            run: expect.anything(),
          },
        },
      },
    ])

    const escalated = await bash({
      command: `touch made.txt ${outside}/also`,
      escalate: true,
      justification: 'the user asked for it',
    })
    expect(text(escalated)).toBe('(no output)\n[exit code: 0]')
    expect(asked[1]).toEqual({
      run: { sessionId: 'bash-session', cwd: dir },
      options: expect.objectContaining({ escalated: true }),
    })
    expect(await exists(join(outside, 'also'))).toBe(true)
  })

  it('offers no escalate parameter unless allowEscalation is on, and says a denied write is final', async () => {
    const permission: PermissionPolicySource = {
      sandboxPolicy: () => ({ mode: 'read-only', writableRoots: [], protectedPaths: [], network: 'off' }),
    }
    await provide('permission', permission)
    await boot()
    expect(Object.keys(root.tools.schemas().find((tool) => tool.name === 'bash')?.parameters.properties ?? {})).toEqual(
      ['command', 'description', 'timeoutMs', 'workdir', 'run_in_background'],
    )
    const denied = await bash({ command: 'touch made.txt', escalate: true, justification: 'please' })
    expect(text(denied)).toContain(
      '[sandbox: a write was denied under the read-only sandbox; this is a policy decision: do not retry the write another way]',
    )
    expect(await exists(join(dir, 'made.txt'))).toBe(false)
  })

  it('refuses escalate without a justification, and without a permission service to approve it', async () => {
    await boot({ allowEscalation: true })
    const bare = await bash({ command: 'true', escalate: true })
    expect(bare.error?.code).toBe('INVALID_ARGUMENTS')
    expect(text(bare)).toContain('justification: escalate needs a justification')
    const unapproved = await bash({ command: `touch ${outside}/x`, escalate: true, justification: 'want to' })
    expect(unapproved.error?.code).toBe('BASH_ESCALATION_UNAVAILABLE')
    expect(await exists(join(outside, 'x'))).toBe(false)
  })
})

describe('bash in the background', () => {
  it('starts a job, which job_output polls to completion', async () => {
    await boot({}, { jobs: true })
    const started = await bash({
      command: 'echo one; until [ -e go ]; do sleep 0.01; done; echo two; exit 4',
      run_in_background: true,
      description: 'counter',
    })
    expect(started.isError).toBe(false)
    const id = (started.meta as { jobId: string }).jobId
    expect(text(started)).toMatch(
      new RegExp(`^started background job ${id}: counter\\nRead its output with job_output \\{"job_id": "${id}"\\}`),
    )
    await writeFile(join(dir, 'go'), '')
    expect(text(await call('job_output', { job_id: id, wait: true, timeout_ms: 60_000 }))).toBe(
      'one\ntwo\n[status: exited, exit code: 4]',
    )
    expect(text(await call('job_list', {}))).toBe(`${id} [exited, exit code: 4] counter`)
  })

  it('job_kill stops a background command and every process it started', async () => {
    await boot({}, { jobs: true })
    const tag = `dsh-bash-marker-${process.pid}-job`
    const started = await bash({ command: `exec -a ${tag} sleep 1000`, run_in_background: true })
    const id = (started.meta as { jobId: string }).jobId
    while ((await liveWithMarker(tag)).length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(text(await call('job_kill', { job_id: id }))).toMatch(
      new RegExp(`^stopped job ${id} .*\\[status: killed\\]$`),
    )
    expect(await liveWithMarker(tag)).toEqual([])
  })

  it('keeps jobs to the session that started them', async () => {
    await boot({}, { jobs: true })
    const started = await bash({ command: 'sleep 1000', run_in_background: true }, options({ sessionId: 'owner' }))
    const id = (started.meta as { jobId: string }).jobId
    const other = options({ sessionId: 'stranger' })
    expect(text(await call('job_list', {}, other))).toBe('(no background jobs)')
    expect((await call('job_output', { job_id: id }, other)).error?.code).toBe('JOB_NOT_FOUND')
    expect((await call('job_kill', { job_id: id }, other)).error?.code).toBe('JOB_NOT_FOUND')
    expect(text(await call('job_list', {}, options({ sessionId: 'owner' })))).toBe(`${id} [running] a test command`)
  })

  it('says so when no jobs service is running', async () => {
    await boot()
    const result = await bash({ command: 'sleep 1', run_in_background: true })
    expect(result.error?.code).toBe('BASH_JOBS_UNAVAILABLE')
  })
})
