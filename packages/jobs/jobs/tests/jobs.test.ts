import { mkdtemp, realpath, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import * as subprocessPlugin from '@dsh/subprocess'
import { isRunning, type LocalSubprocessConfig } from '@dsh/subprocess'
import * as toolsPlugin from '@dsh/tools'
import type { ToolResult, ToolRunOptions, ToolsConfig } from '@dsh/tools'
import { disposeTestRoot, mountPlugin } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as jobsPlugin from '../src/index.ts'
import { type JobInfo, JobLimitError, JobNotFoundError, type LocalJobsConfig, OutputRing } from '../src/index.ts'
import * as jobToolsPlugin from '../src/tools.ts'
import type { JobToolsConfig } from '../src/tools.ts'

let root: Context
let dir: string

beforeEach(async () => {
  root = new Context()
  dir = await realpath(await mkdtemp(join(tmpdir(), 'dsh-jobs-')))
  await root.plugin(subprocessPlugin, { drainMs: 200 } as LocalSubprocessConfig)
})

afterEach(() => disposeTestRoot(root, dir))

const boot = (config: Partial<LocalJobsConfig> = {}) => mountPlugin(root, jobsPlugin, config)

function start(script: string, sessionId = 'session-a', label = script) {
  const handle = root.subprocess.run({ argv: ['bash', '-c', script], cwd: dir })
  return { id: root.jobs.start({ label, handle, sessionId }), handle }
}

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 10))
}

describe('OutputRing', () => {
  it('keeps the newest bytes within its bound and counts the dropped ones', () => {
    const ring = new OutputRing(10)
    ring.push(Buffer.from('abcdef'))
    ring.push(Buffer.from('ghijkl'))
    expect(ring.end).toBe(12)
    expect(ring.dropped).toBe(2)
    expect(ring.read(0)).toEqual({ bytes: Buffer.from('cdefghijkl'), from: 2 })
    expect(ring.read(8).bytes.toString()).toBe('ijkl')
    ring.push(Buffer.from('0123456789ABC'))
    expect(ring.read(0)).toEqual({ bytes: Buffer.from('3456789ABC'), from: 15 })
    expect(ring.read(100)).toEqual({ bytes: Buffer.alloc(0), from: 25 })
  })
})

describe('ctx.jobs (local)', () => {
  it('runs a job to completion with stdout and stderr interleaved', async () => {
    await boot()
    const { id } = start('echo one; echo two >&2; echo three; exit 3')
    const info = await root.jobs.completion(id)
    expect(info.status).toEqual({ state: 'exited', code: 3 })
    const output = root.jobs.output(id)
    expect(output.text.split('\n').sort()).toEqual(['', 'one', 'three', 'two'])
    expect(output).toMatchObject({ from: 0, dropped: 0, offset: 14, status: { state: 'exited', code: 3 } })
    expect(root.jobs.output(id, { since: output.offset }).text).toBe('')
  })

  it('keeps only the tail of the output and says how much was dropped', async () => {
    await boot({ maxBufferedBytes: 100 })
    const { id } = start('seq 1 1000')
    await root.jobs.completion(id)
    // seq 1 1000 prints 3893 bytes.
    const output = root.jobs.output(id)
    expect(output.dropped).toBe(3793)
    expect(output.text).toMatch(/\n998\n999\n1000\n$/)
    expect(Buffer.byteLength(output.text)).toBe(100)
    expect(root.jobs.get(id)).toMatchObject({ outputBytes: 3893, droppedBytes: 3793 })
  })

  it('waits for new output past an offset, or for the end of the job', async () => {
    await boot()
    const { id } = start(
      'echo first; until [ -e go ]; do sleep 0.01; done; echo second; until [ -e stop ]; do sleep 0.01; done',
    )
    const first = await root.jobs.waitForOutput(id, { since: 0, timeoutMs: 60_000 })
    expect(first.text).toBe('first\n')
    const pending = root.jobs.waitForOutput(id, { since: first.offset, timeoutMs: 60_000 })
    await writeFile(join(dir, 'go'), '')
    const second = await pending
    expect(second.text).toBe('second\n')
    expect(second.status).toEqual({ state: 'running' })
    const ending = root.jobs.waitForOutput(id, { since: second.offset, timeoutMs: 60_000 })
    await writeFile(join(dir, 'stop'), '')
    expect(await ending).toMatchObject({ text: '', status: { state: 'exited', code: 0 } })
  })

  it('a wait ends with the timeout or the signal, leaving the job running', async () => {
    await boot()
    const { id } = start('sleep 1000')
    expect((await root.jobs.waitForOutput(id, { timeoutMs: 50 })).status).toEqual({ state: 'running' })
    const abort = new AbortController()
    const pending = root.jobs.waitForOutput(id, { timeoutMs: 600_000, signal: abort.signal })
    abort.abort()
    expect((await pending).status).toEqual({ state: 'running' })
    expect(root.jobs.get(id)?.status).toEqual({ state: 'running' })
  })

  it('kill stops the whole tree and reports the job as killed', async () => {
    await boot()
    const { id, handle } = start('sleep 1000 & echo $!; wait')
    const first = await root.jobs.waitForOutput(id, { timeoutMs: 60_000 })
    const child = Number(first.text.trim())
    const info = await root.jobs.kill(id)
    expect(info.status).toEqual({ state: 'killed' })
    expect(await isRunning(child)).toBe(false)
    expect(await isRunning(handle.pid!)).toBe(false)
  })

  it('keeps jobs per session: another session can neither see, read nor kill them', async () => {
    await boot()
    const { id } = start('sleep 1000', 'session-a')
    start('true', 'session-b')
    expect(root.jobs.list('session-a').map((job) => job.id)).toEqual([id])
    expect(root.jobs.list('session-b')).toHaveLength(1)
    expect(root.jobs.list('session-b')[0]?.id).not.toBe(id)
    expect(root.jobs.get(id, { sessionId: 'session-b' })).toBeUndefined()
    expect(() => root.jobs.output(id, { sessionId: 'session-b' })).toThrow(JobNotFoundError)
    await expect(root.jobs.kill(id, { sessionId: 'session-b' })).rejects.toBeInstanceOf(JobNotFoundError)
    expect(root.jobs.get(id, { sessionId: 'session-a' })?.status).toEqual({ state: 'running' })
  })

  it('refuses a job beyond the per-session limit and kills its process', async () => {
    await boot({ maxRunningPerSession: 1 })
    start('sleep 1000')
    const extra = root.subprocess.run({ argv: ['sleep', '1000'], cwd: dir })
    expect(() => root.jobs.start({ label: 'extra', handle: extra, sessionId: 'session-a' })).toThrow(JobLimitError)
    expect((await extra.done).cancelled).toBe(true)
    // Another session has its own allowance.
    start('true', 'session-b')
  })

  it('announces finished jobs on jobs/finished', async () => {
    await boot()
    const seen: JobInfo[] = []
    root.on('jobs/finished', (job) => void seen.push(job))
    const { id } = start('exit 5')
    await root.jobs.completion(id)
    expect(seen).toMatchObject([{ id, status: { state: 'exited', code: 5 } }])
  })

  it('disposing the plugin kills every job and awaits it', async () => {
    const fiber = await boot()
    const a = start('sleep 1000 & echo $!; wait', 'session-a')
    const b = start('sleep 1000', 'session-b')
    const first = await root.jobs.waitForOutput(a.id, { timeoutMs: 60_000 })
    const child = Number(first.text.trim())
    const jobs = root.jobs
    await fiber.dispose()
    for (const pid of [child, a.handle.pid!, b.handle.pid!]) expect(await isRunning(pid)).toBe(false)
    expect((await b.handle.done).cancelled).toBe(true)
    expect(() =>
      jobs.start({ label: 'late', handle: root.subprocess.run({ argv: ['sleep', '1000'], cwd: dir }), sessionId: 's' }),
    ).toThrow(/disposed/)
  })
})

describe('job tools', () => {
  let calls = 0

  async function bootTools(config: Partial<JobToolsConfig> = {}) {
    await boot()
    await root.plugin(toolsPlugin, {} as ToolsConfig)
    const fiber = root.plugin(jobToolsPlugin, config as JobToolsConfig)
    await fiber
    return fiber
  }

  function options(sessionId = 'session-a'): ToolRunOptions {
    return { signal: new AbortController().signal, cwd: dir, sessionId, sessionState: states.get(sessionId)! }
  }

  const states = new Map([
    ['session-a', new Map<string, unknown>()],
    ['session-b', new Map<string, unknown>()],
  ])

  beforeEach(() => {
    for (const state of states.values()) state.clear()
  })

  async function call(name: string, args: Record<string, unknown>, sessionId = 'session-a'): Promise<ToolResult> {
    calls += 1
    return root.tools.execute(
      { callId: `j${calls}` as ToolCallId, name, arguments: JSON.stringify(args) },
      options(sessionId),
    )
  }

  function text(result: ToolResult): string {
    return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
  }

  it('registers job_output, job_list and job_kill, and removes them when disposed', async () => {
    const fiber = await bootTools()
    expect(root.tools.list().map((tool) => tool.name)).toEqual(['job_kill', 'job_list', 'job_output'])
    expect(root.tools.isConcurrencySafe('job_list', '{}')).toBe(true)
    expect(root.tools.get('job_output')?.access?.({ job_id: 'job-1' })).toEqual({
      kind: 'read',
      summary: 'output of background job job-1',
    })
    await fiber.dispose()
    expect(root.tools.list()).toEqual([])
  })

  it('job_output reads only what is new since the last call and waits for the end', async () => {
    await bootTools()
    const { id } = start('echo hello; until [ -e go ]; do sleep 0.01; done; echo bye; exit 2', 'session-a', 'greeter')
    await until(() => root.jobs.output(id).text !== '')
    expect(text(await call('job_output', { job_id: id }))).toBe('hello\n[status: running]')
    expect(text(await call('job_output', { job_id: id }))).toBe('(no new output)\n[status: running]')
    await writeFile(join(dir, 'go'), '')
    await root.jobs.completion(id)
    expect(text(await call('job_output', { job_id: id, wait: true, timeout_ms: 60_000 }))).toBe(
      'bye\n[status: exited, exit code: 2]',
    )
    expect(text(await call('job_list', {}))).toBe(`${id} [exited, exit code: 2] greeter`)
  })

  it('job_output with wait returns as soon as the job ends', async () => {
    await bootTools()
    const { id } = start('until [ -e go ]; do sleep 0.01; done; echo done')
    const pending = call('job_output', { job_id: id, wait: true, timeout_ms: 600_000 })
    await writeFile(join(dir, 'go'), '')
    expect(text(await pending)).toBe('done\n[status: exited, exit code: 0]')
  })

  it('job_output returns the newest part of a large read and says what it skipped', async () => {
    await bootTools({ maxReadBytes: 20 })
    const { id } = start('seq 1 1000')
    await root.jobs.completion(id)
    const out = text(await call('job_output', { job_id: id }))
    expect(out).toBe(
      '[skipped 3873 bytes of new output; showing the newest 20]\n96\n997\n998\n999\n1000\n[status: exited, exit code: 0]',
    )
  })

  it('job_kill stops a running job and reports one that already ended', async () => {
    await bootTools()
    const { id, handle } = start('sleep 1000', 'session-a', 'sleeper')
    expect(text(await call('job_kill', { job_id: id, reason: 'no longer needed' }))).toBe(
      `stopped job ${id} (sleeper) because: no longer needed [status: killed]`,
    )
    expect(await isRunning(handle.pid!)).toBe(false)
    expect(text(await call('job_kill', { job_id: id }))).toBe(`job ${id} had already ended [status: killed]`)
    expect(text(await call('job_output', { job_id: id }))).toBe('(no new output)\n[status: killed]')
  })

  it('keeps sessions apart: another session gets JOB_NOT_FOUND and an empty list', async () => {
    await bootTools()
    const { id } = start('sleep 1000', 'session-a')
    expect(text(await call('job_list', {}, 'session-b'))).toBe('(no background jobs)')
    for (const [name, args] of [
      ['job_output', { job_id: id }],
      ['job_kill', { job_id: id }],
    ] as const) {
      const result = await call(name, args, 'session-b')
      expect(result.error?.code).toBe('JOB_NOT_FOUND')
      expect(text(result)).toContain(`there is no background job ${id} in this session`)
    }
    expect(root.jobs.get(id)?.status).toEqual({ state: 'running' })
  })

  it('job_output with wait gives up at timeout_ms and leaves the job running', async () => {
    await bootTools()
    const { id } = start('echo started; sleep 1000')
    expect(text(await call('job_output', { job_id: id, wait: true, timeout_ms: 50 }))).toMatch(/\[status: running\]$/)
    expect(root.jobs.get(id)?.status).toEqual({ state: 'running' })
  })

  it('refuses a wait beyond the maximum', async () => {
    await bootTools({ maxWaitMs: 1000 })
    const result = await call('job_output', { job_id: 'job-1', wait: true, timeout_ms: 1001 })
    expect(result.error?.code).toBe('INVALID_ARGUMENTS')
  })
})

describe('the end of a session', () => {
  it('kills that session’s running jobs and leaves the others running', async () => {
    await boot()
    const mine = start('sleep 1000', 'session-closing')
    const other = start('sleep 1000', 'session-staying')
    await root.parallel('session/closed', { id: 'session-closing' } as never)
    expect((await root.jobs.completion(mine.id)).status).toEqual({ state: 'killed' })
    expect(await isRunning(mine.handle.pid!)).toBe(false)
    expect(root.jobs.get(other.id)?.status).toEqual({ state: 'running' })
    expect(await isRunning(other.handle.pid!)).toBe(true)
  })
})
