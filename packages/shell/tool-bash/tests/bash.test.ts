import { access, mkdtemp, readFile, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import * as tools from '@dsh/tools'
import type { ToolResult, ToolRunOptions, ToolsConfig } from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as bashTool from '../src/index.ts'
import type { BashToolConfig } from '../src/index.ts'

let root: Context
let dir: string
let calls = 0

beforeEach(async () => {
  root = new Context()
  dir = await realpath(await mkdtemp(join(tmpdir(), 'dsh-tool-bash-')))
  await root.plugin(tools, {} as ToolsConfig)
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(dir, { recursive: true, force: true })
})

async function boot(config: Partial<BashToolConfig> = {}) {
  const fiber = root.plugin(bashTool, config as BashToolConfig)
  await fiber
  return fiber
}

function options(overrides: Partial<ToolRunOptions> = {}): ToolRunOptions {
  return { signal: new AbortController().signal, cwd: dir, sessionId: 'bash-session', sessionState: new Map(), ...overrides }
}

async function bash(args: Record<string, unknown>, run: ToolRunOptions = options()): Promise<ToolResult> {
  calls += 1
  return root.tools.execute({ callId: `b${calls}` as ToolCallId, name: 'bash', arguments: JSON.stringify(args) }, run)
}

function text(result: ToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}

/** Whether a process still runs: present in /proc and not a zombie (orphans here may never be reaped). */
async function alive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z'
  } catch {
    return false
  }
}

function pids(output: string): number[] {
  return output
    .split('\n')
    .filter((line) => /^\d+$/.test(line))
    .map(Number)
}

async function waitForFile(path: string): Promise<void> {
  for (;;) {
    try {
      await access(path)
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
}

describe('bash', () => {
  it('registers bash with a budget beyond its own longest timeout, and removes it when disposed', async () => {
    const fiber = await boot({ maxTimeoutMs: 1000, killGraceMs: 100 })
    const tool = root.tools.get('bash')
    expect(tool?.timeoutMs).toBeGreaterThan(1000 + 2 * 100)
    expect(root.tools.isConcurrencySafe('bash', '{"command":"ls"}')).toBe(false)
    await fiber.dispose()
    expect(root.tools.get('bash')).toBeUndefined()
  })

  it('returns stdout and the exit code', async () => {
    await boot()
    const result = await bash({ command: 'echo hello; echo world', description: 'greet' })
    expect(result.isError).toBe(false)
    expect(text(result)).toBe('hello\nworld\n[exit code: 0]')
    expect(result.meta).toMatchObject({ exitCode: 0, signal: null, timedOut: false })
  })

  it('reports stderr and a non-zero exit without calling it an error', async () => {
    await boot()
    const result = await bash({ command: 'echo partial; echo "no such thing" >&2; exit 3' })
    expect(result.isError).toBe(false)
    expect(text(result)).toBe('partial\n[stderr]\nno such thing\n[exit code: 3]')
  })

  it('says when there is no output, and names a killing signal', async () => {
    await boot()
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
    const saved = { ...process.env }
    process.env.FOO_TOKEN = 'leak-1'
    process.env.my_api_key = 'leak-2'
    process.env.DB_PASSWORD = 'leak-3'
    process.env.AWS_SECRET_ACCESS_KEY = 'leak-4'
    process.env.PLAIN_SETTING = 'visible'
    try {
      const out = text(await bash({ command: 'env' }))
      expect(out).not.toMatch(/leak-/)
      expect(out).toContain('PLAIN_SETTING=visible')
      expect(out).toContain(`HOME=${process.env.HOME}`)
      expect(out).toContain('NO_COLOR=1')
    } finally {
      for (const key of ['FOO_TOKEN', 'my_api_key', 'DB_PASSWORD', 'AWS_SECRET_ACCESS_KEY', 'PLAIN_SETTING']) delete process.env[key]
      Object.assign(process.env, saved)
    }
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

  it('kills the whole process tree on timeout', async () => {
    await boot()
    const result = await bash({ command: 'sleep 1000 & echo $!; (sleep 1000 & echo $!; wait) & wait', timeout: 1000 })
    expect(result.isError).toBe(true)
    expect(result.error?.code).toBe('BASH_TIMEOUT')
    const out = text(result)
    expect(out).toContain('[timed out after 1000ms; the command and its child processes were killed]')
    const children = pids(out)
    expect(children).toHaveLength(2)
    for (const pid of children) expect(await alive(pid)).toBe(false)
  })

  it('escalates to SIGKILL when the tree ignores SIGTERM', async () => {
    await boot({ killGraceMs: 100 })
    const result = await bash({ command: 'trap "" TERM; sleep 1000 & echo $!; wait', timeout: 200 })
    expect(text(result)).toContain('[timed out after 200ms')
    expect(text(result)).toContain('[killed by signal: SIGKILL]')
    for (const pid of pids(text(result))) expect(await alive(pid)).toBe(false)
  })

  it('kills the tree when the caller cancels', async () => {
    await boot()
    const caller = new AbortController()
    const pending = bash({ command: 'sleep 1000 & echo $! > child.pid; wait' }, options({ signal: caller.signal }))
    await waitForFile(join(dir, 'child.pid'))
    const child = Number((await readFile(join(dir, 'child.pid'), 'utf8')).trim())
    caller.abort()
    const result = await pending
    expect(result.error?.code).toBe('CANCELLED')
    expect(await alive(child)).toBe(false)
  })

  it('reports background processes left running and stops them when the plugin is disposed', async () => {
    const fiber = await boot({ killGraceMs: 200 })
    const result = await bash({ command: 'sleep 1000 >/dev/null 2>&1 & echo $!' })
    const [child] = pids(text(result))
    expect(text(result)).toContain('[exit code: 0]\n[background processes started by this command are still running]')
    expect(await alive(child!)).toBe(true)
    await fiber.dispose()
    expect(await alive(child!)).toBe(false)
  })

  it('refuses a timeout beyond the maximum', async () => {
    await boot({ maxTimeoutMs: 5000 })
    const result = await bash({ command: 'true', timeout: 5001 })
    expect(result.error?.code).toBe('INVALID_ARGUMENTS')
    expect(text(result)).toContain('timeout:')
  })
})
