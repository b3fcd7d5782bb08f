import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, type Fiber } from '@dsh/cordis'
import * as subprocess from '@dsh/subprocess'
import type { LocalSubprocessConfig } from '@dsh/subprocess'
import { LEAKY_ENVIRONMENT, withEnvironment } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as terminals from '../src/index.ts'
import { type LocalTerminalsConfig, TerminalError, type TerminalId } from '../src/index.ts'

let root: Context
let dir: string

const QUICK_BASH: Partial<LocalTerminalsConfig> = {
  shell: 'bash',
  shellArgs: ['--norc', '--noprofile'],
  killGraceMs: 500,
}
const LONG = 20_000

beforeEach(async () => {
  root = new Context()
  dir = await realpath(await mkdtemp(join(tmpdir(), 'dsh-terminals-')))
  // The terminals take their environment from the subprocess policy.
  await root.plugin(subprocess, {} as LocalSubprocessConfig)
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(dir, { recursive: true, force: true })
})

async function boot(config: Partial<LocalTerminalsConfig> = {}): Promise<Fiber> {
  const fiber = root.plugin(terminals, { ...QUICK_BASH, ...config } as LocalTerminalsConfig)
  await fiber
  return fiber
}

/** Runs a shell line in the terminal and returns the number it prints after `PID=`. */
async function startedPid(id: TerminalId, line: string): Promise<number> {
  const since = root.terminals.get(id)!.offset
  root.terminals.write(id, `${line}\r`)
  const result = await root.terminals.waitFor(id, { pattern: /PID=(\d+)/, timeoutMs: LONG, since })
  expect(result.reason).toBe('pattern')
  return Number(result.match?.[1])
}

async function code(promise: Promise<unknown> | (() => unknown)): Promise<string | undefined> {
  try {
    await (typeof promise === 'function' ? promise() : promise)
  } catch (error) {
    expect(error).toBeInstanceOf(TerminalError)
    return (error as TerminalError).code
  }
  return undefined
}

describe('terminals', () => {
  it('runs an interactive bash: input goes in, plain output comes out, raw output is kept', async () => {
    await boot()
    const id = await root.terminals.create({ sessionId: 's1', cwd: dir })
    root.terminals.write(id, 'echo hi; pwd\r')
    const waited = await root.terminals.waitFor(id, { pattern: /^hi$/m, timeoutMs: LONG, since: 0 })
    expect(waited.reason).toBe('pattern')
    expect(waited.exited).toBeUndefined()
    await root.terminals.waitFor(id, { pattern: new RegExp(`^${dir}$`, 'm'), timeoutMs: LONG, since: 0 })
    const output = root.terminals.read(id)
    expect(output.text.split('\n')).toContain('hi')
    expect(output.text).not.toMatch(/[\x1b\r]/)
    expect(output.dropped).toBe(0)
    expect(output.offset).toBe(Buffer.byteLength(output.text))
    expect(root.terminals.readRaw(id).text).toContain('hi\r\n')
    const [info] = root.terminals.list('s1')
    expect(info).toMatchObject({ id, sessionId: 's1', command: 'bash', cwd: dir, cols: 160, rows: 40 })
    expect(await subprocess.isRunning(info!.pid)).toBe(true)
  })

  it("runs the user's shell by default", async () => {
    await boot({ shell: '', shellArgs: [] })
    const id = await root.terminals.create({ sessionId: 's1', cwd: dir })
    expect(root.terminals.get(id)?.command).toBe(process.env.SHELL || 'bash')
    root.terminals.write(id, 'echo "answer $((40 + 2))"\r')
    expect(await root.terminals.waitFor(id, { pattern: /^answer 42$/m, timeoutMs: LONG })).toMatchObject({
      reason: 'pattern',
    })
  })

  it('runs a command, strips its colours, reports its exit and refuses input afterwards', async () => {
    await boot()
    const id = await root.terminals.create({
      sessionId: 's1',
      cwd: dir,
      command: 'printf "a\\033[31mred\\033[0m\\n"; exit 3',
    })
    const waited = await root.terminals.waitFor(id, { timeoutMs: LONG })
    expect(waited).toMatchObject({ reason: 'exit', exited: { code: 3, signal: null } })
    expect(root.terminals.read(id)).toEqual({
      text: 'ared\n',
      offset: 5,
      dropped: 0,
      exited: { code: 3, signal: null },
    })
    expect(root.terminals.readRaw(id).text).toBe('a\x1b[31mred\x1b[0m\r\n')
    expect(await code(() => root.terminals.write(id, 'more\r'))).toBe('EXITED')
    expect(root.terminals.get(id)?.exited).toEqual({ code: 3, signal: null })
    // Output that is already there counts for a later wait.
    expect(await root.terminals.waitFor(id, { pattern: /red/, since: 0, timeoutMs: LONG })).toMatchObject({
      reason: 'pattern',
    })
    await root.terminals.kill(id)
    expect(root.terminals.get(id)).toBeUndefined()
    expect(await code(() => root.terminals.read(id))).toBe('NOT_FOUND')
  })

  it('names the signal that killed the process', async () => {
    await boot()
    const id = await root.terminals.create({ sessionId: 's1', cwd: dir, command: 'kill -TERM $$' })
    expect(await root.terminals.waitFor(id, { timeoutMs: LONG })).toMatchObject({
      reason: 'exit',
      exited: { code: null, signal: 'SIGTERM' },
    })
  })

  it('keeps the newest output when the buffer overflows and counts the dropped bytes', async () => {
    await boot({ bufferBytes: 1000 })
    const id = await root.terminals.create({ sessionId: 's1', cwd: dir, command: 'seq 1 1000' })
    await root.terminals.waitFor(id, { timeoutMs: LONG })
    // seq 1 1000 prints 3893 bytes; the PTY turns each of its 1000 newlines into CRLF.
    const output = root.terminals.read(id)
    expect(output.offset).toBe(3893)
    expect(output.dropped).toBe(2893)
    expect(Buffer.byteLength(output.text)).toBe(1000)
    expect(output.text.endsWith('\n998\n999\n1000\n')).toBe(true)
    expect(root.terminals.read(id, { since: 3000 })).toMatchObject({ dropped: 0, offset: 3893 })
    expect(root.terminals.read(id, { since: 3000 }).text).toHaveLength(893)
    expect(root.terminals.read(id, { since: output.offset })).toEqual({
      text: '',
      offset: 3893,
      dropped: 0,
      exited: { code: 0, signal: null },
    })
    const raw = root.terminals.readRaw(id)
    expect(raw.offset).toBe(4893)
    expect(raw.dropped).toBe(3893)
  })

  it('keeps the tail of the output of a command that writes more than the PTY holds and exits while nobody reads', async () => {
    await boot()
    const id = await root.terminals.create({ sessionId: 's1', cwd: dir, command: 'seq 1 3000' })
    // Keep the event loop busy while the command fills the PTY and exits.
    const start = Date.now()
    while (Date.now() - start < 300) {
      // busy
    }
    await root.terminals.waitFor(id, { timeoutMs: LONG })
    const output = root.terminals.read(id)
    // seq 1 3000 prints 13893 bytes.
    expect(output.offset).toBe(13893)
    expect(output.text.endsWith('\n2999\n3000\n')).toBe(true)
  })

  it('scrubs credential-like variables from the environment and adds the configured ones', async () => {
    await boot({ env: { PAGER: 'cat', CONFIGURED: 'from-config' } })
    const lines = await withEnvironment({ ...LEAKY_ENVIRONMENT, PLAIN_SETTING: 'visible' }, async () => {
      const id = await root.terminals.create({ sessionId: 's1', cwd: dir, command: 'env', env: { EXPLICIT: 'given' } })
      await root.terminals.waitFor(id, { timeoutMs: LONG })
      return root.terminals.read(id).text.split('\n')
    })
    expect(lines.join('\n')).not.toMatch(/leak-/)
    expect(lines).toEqual(
      expect.arrayContaining([
        'PLAIN_SETTING=visible',
        'CONFIGURED=from-config',
        'EXPLICIT=given',
        'TERM=xterm-256color',
        'PAGER=cat',
      ]),
    )
  })

  it('waits for quiet output, gives up at the timeout, and rejects on abort', async () => {
    await boot()
    const id = await root.terminals.create({ sessionId: 's1', cwd: dir, command: 'echo started; sleep 1000' })
    expect(await root.terminals.waitFor(id, { pattern: /started/, since: 0, timeoutMs: LONG })).toMatchObject({
      reason: 'pattern',
    })
    expect(await root.terminals.waitFor(id, { idleMs: 100, timeoutMs: LONG })).toMatchObject({ reason: 'idle' })
    expect(await root.terminals.waitFor(id, { pattern: /never/, timeoutMs: 100 })).toMatchObject({ reason: 'timeout' })
    const abort = new AbortController()
    const waiting = root.terminals.waitFor(id, { pattern: /never/, timeoutMs: LONG, signal: abort.signal })
    abort.abort(new Error('stop waiting'))
    await expect(waiting).rejects.toThrow('stop waiting')
    expect(root.terminals.get(id)?.exited).toBeUndefined()
  })

  it('kills the whole process tree of a terminal, jobs in other process groups included', async () => {
    await boot()
    const id = await root.terminals.create({ sessionId: 's1', cwd: dir })
    const shell = root.terminals.get(id)!.pid
    const job = await startedPid(id, 'sleep 1000 & echo "PID=$!"')
    expect(await subprocess.isRunning(job)).toBe(true)
    const waiting = root.terminals.waitFor(id, { pattern: /never/, timeoutMs: LONG })
    await root.terminals.kill(id)
    expect(await waiting).toMatchObject({ reason: 'exit' })
    expect(await subprocess.isRunning(shell)).toBe(false)
    expect(await subprocess.isRunning(job)).toBe(false)
    expect(root.terminals.list('s1')).toEqual([])
    expect(await code(root.terminals.kill(id))).toBe('NOT_FOUND')
  })

  it('escalates to SIGKILL for processes that ignore SIGHUP and SIGTERM', async () => {
    await boot({ killGraceMs: 100 })
    const id = await root.terminals.create({
      sessionId: 's1',
      cwd: dir,
      command: 'trap "" HUP TERM; sleep 1000 & echo "PID=$!"; wait',
    })
    const result = await root.terminals.waitFor(id, { pattern: /PID=(\d+)/, timeoutMs: LONG, since: 0 })
    const child = Number(result.match?.[1])
    const shell = root.terminals.get(id)!.pid
    await root.terminals.kill(id)
    expect(await subprocess.isRunning(child)).toBe(false)
    expect(await subprocess.isRunning(shell)).toBe(false)
  })

  it('stops background jobs left behind when the shell exits by itself', async () => {
    await boot()
    const id = await root.terminals.create({ sessionId: 's1', cwd: dir })
    const job = await startedPid(id, 'sleep 1000 & echo "PID=$!"')
    root.terminals.write(id, 'exit 4\r')
    expect(await root.terminals.waitFor(id, { timeoutMs: LONG })).toMatchObject({
      reason: 'exit',
      exited: { code: 4, signal: null },
    })
    // Nobody kills the terminal: the job goes because its shell went.
    while (await subprocess.isRunning(job)) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(root.terminals.get(id)?.exited).toEqual({ code: 4, signal: null })
  })

  it('keeps sessions apart and limits the terminals of one session', async () => {
    await boot({ maxPerSession: 2 })
    const a1 = await root.terminals.create({ sessionId: 'a', cwd: dir, command: 'sleep 1000' })
    const a2 = await root.terminals.create({ sessionId: 'a', cwd: dir, command: 'sleep 1000' })
    expect(await code(root.terminals.create({ sessionId: 'a', cwd: dir, command: 'sleep 1000' }))).toBe('LIMIT')
    const b1 = await root.terminals.create({ sessionId: 'b', cwd: dir, command: 'true' })
    await root.terminals.waitFor(b1, { timeoutMs: LONG })
    const b2 = await root.terminals.create({ sessionId: 'b', cwd: dir, command: 'sleep 1000' })
    expect(root.terminals.list('a').map((t) => t.id)).toEqual([a1, a2])
    expect(root.terminals.list('b').map((t) => t.id)).toEqual([b1, b2])
    // At the limit, the oldest exited terminal makes room.
    const b3 = await root.terminals.create({ sessionId: 'b', cwd: dir, command: 'sleep 1000' })
    expect(root.terminals.list('b').map((t) => t.id)).toEqual([b2, b3])
    const pidsOfA = root.terminals.list('a').map((t) => t.pid)
    await root.terminals.killSession('a')
    expect(root.terminals.list('a')).toEqual([])
    for (const pid of pidsOfA) expect(await subprocess.isRunning(pid)).toBe(false)
    expect(root.terminals.list('b').map((t) => t.id)).toEqual([b2, b3])
  })

  it('refuses a relative or missing working directory', async () => {
    await boot()
    expect(await code(root.terminals.create({ sessionId: 's1', cwd: 'relative' }))).toBe('SPAWN_FAILED')
    expect(await code(root.terminals.create({ sessionId: 's1', cwd: join(dir, 'missing') }))).toBe('SPAWN_FAILED')
    expect(await code(root.terminals.create({ sessionId: 's1', cwd: dir, command: ' ' }))).toBe('SPAWN_FAILED')
  })

  it('kills every terminal and every process they started when the plugin is disposed', async () => {
    const fiber = await boot({ killGraceMs: 200 })
    const shell = await root.terminals.create({ sessionId: 'a', cwd: dir })
    const pids = [root.terminals.get(shell)!.pid]
    pids.push(await startedPid(shell, 'sleep 1000 & echo "PID=$!"'))
    pids.push(await startedPid(shell, '(trap "" HUP TERM; sleep 1000 & echo "PID=$!"; wait) &'))
    const command = await root.terminals.create({
      sessionId: 'b',
      cwd: dir,
      command: 'bash -c "sleep 1000 & echo PID=\\$!; wait"',
    })
    const nested = await root.terminals.waitFor(command, { pattern: /PID=(\d+)/, since: 0, timeoutMs: LONG })
    pids.push(root.terminals.get(command)!.pid, Number(nested.match?.[1]))
    expect(new Set(pids).size).toBe(5)
    for (const pid of pids) expect(await subprocess.isRunning(pid)).toBe(true)

    await fiber.dispose()
    for (const pid of pids) expect(await subprocess.isRunning(pid)).toBe(false)
    expect(root.get('terminals')).toBeUndefined()
  })
})

describe('with a sandbox service', () => {
  it('nothing started in a terminal outlives it, not even nohup setsid', async () => {
    const sandbox = await import('@dsh/sandbox')
    await root.plugin(sandbox, {} as import('@dsh/sandbox').BwrapSandboxConfig)
    await boot()
    const id = await root.terminals.create({ sessionId: 'reaped', cwd: dir })
    const tag = `dsh-terminal-reaped-${process.pid}`
    const since = root.terminals.get(id)!.offset
    root.terminals.write(
      id,
      `nohup setsid bash -c 'exec -a ${tag} sleep 1000' >/dev/null 2>&1 & echo STARTED; echo $HOME\r`,
    )
    const started = await root.terminals.waitFor(id, { pattern: /STARTED/, timeoutMs: LONG, since })
    expect(started.reason).toBe('pattern')
    // Unconfined: the host's home is there as usual.
    await root.terminals.waitFor(id, { pattern: new RegExp(process.env.HOME ?? '/'), timeoutMs: LONG, since })
    const survivor = async () => (await import('../../../shell/shell/tests/processes.ts')).liveWithMarker(tag)
    let running: number[] = []
    for (let i = 0; i < 100 && running.length === 0; i++) {
      running = await survivor()
      if (running.length === 0) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(running).toHaveLength(1)
    await root.terminals.kill(id)
    expect(await survivor()).toEqual([])
  })
})
