import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, type Fiber } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import * as subprocess from '@dsh/subprocess'
import type { LocalSubprocessConfig } from '@dsh/subprocess'
import * as terminals from '@dsh/terminals'
import type { LocalTerminalsConfig } from '@dsh/terminals'
import * as tools from '@dsh/tools'
import type { ToolResult, ToolRunOptions, ToolsConfig } from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as terminalTool from '../src/index.ts'
import type { TerminalToolsConfig } from '../src/index.ts'

let root: Context
let dir: string
let terminalsFiber: Fiber
let calls = 0

const LONG = 20_000

beforeEach(async () => {
  root = new Context()
  dir = await realpath(await mkdtemp(join(tmpdir(), 'dsh-tool-terminal-')))
  await root.plugin(tools, {} as ToolsConfig)
  await root.plugin(subprocess, {} as LocalSubprocessConfig)
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(dir, { recursive: true, force: true })
})

async function boot(
  terminalConfig: Partial<LocalTerminalsConfig> = {},
  toolConfig: Partial<TerminalToolsConfig> = {},
): Promise<Fiber> {
  terminalsFiber = root.plugin(terminals, {
    shell: 'bash',
    shellArgs: ['--norc', '--noprofile'],
    killGraceMs: 300,
    ...terminalConfig,
  } as LocalTerminalsConfig)
  await terminalsFiber
  const fiber = root.plugin(terminalTool, { idleMs: 300, startupTimeoutMs: LONG, ...toolConfig } as TerminalToolsConfig)
  await fiber
  return fiber
}

/** The options of one session's calls; calls of the same session share its state. */
function session(sessionId: string): ToolRunOptions {
  return { signal: new AbortController().signal, cwd: dir, sessionId, sessionState: new Map() }
}

const A = () => sessionA
let sessionA: ToolRunOptions
beforeEach(() => {
  sessionA = session('session-a')
})

async function call(name: string, args: Record<string, unknown>, run: ToolRunOptions = A()): Promise<ToolResult> {
  calls += 1
  return root.tools.execute({ callId: `t${calls}` as ToolCallId, name, arguments: JSON.stringify(args) }, run)
}

function text(result: ToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}

function meta(result: ToolResult): Record<string, unknown> {
  return result.meta as Record<string, unknown>
}

async function create(
  args: Record<string, unknown> = {},
  run: ToolRunOptions = A(),
): Promise<{ id: string; result: ToolResult }> {
  const result = await call('terminal_create', args, run)
  expect(result.isError, text(result)).toBe(false)
  return { id: meta(result).terminalId as string, result }
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

/** Reads (waiting for output each time) until `done` says the collected output is complete. */
async function readUntil(
  id: string,
  done: (collected: string, last: ToolResult) => boolean,
  run: ToolRunOptions = A(),
): Promise<string> {
  let collected = ''
  for (;;) {
    const result = await call('terminal_read', { terminal_id: id, wait_ms: 2_000 }, run)
    expect(result.isError, text(result)).toBe(false)
    collected += `${text(result)}\n`
    if (done(collected, result)) return collected
  }
}

describe('terminal tools', () => {
  it('registers five tools that declare their access, and removes them when disposed', async () => {
    const fiber = await boot()
    expect(root.tools.list().map((tool) => tool.name)).toEqual([
      'terminal_create',
      'terminal_kill',
      'terminal_list',
      'terminal_read',
      'terminal_send',
    ])
    expect(root.tools.get('terminal_create')?.access?.({ command: 'python3' })).toEqual({
      kind: 'execute',
      escalated: true,
      summary: 'python3',
    })
    expect(root.tools.get('terminal_create')?.access?.({})).toMatchObject({
      kind: 'execute',
      summary: 'an interactive shell',
    })
    expect(
      root.tools.get('terminal_send')?.access?.({ terminal_id: 'term-1', input: 'ls', press_enter: true }),
    ).toEqual({
      kind: 'execute',
      escalated: true,
      summary: 'term-1: ls',
    })
    expect(root.tools.get('terminal_kill')?.access?.({ terminal_id: 'term-1' })).toMatchObject({ kind: 'execute' })
    await fiber.dispose()
    expect(root.tools.list()).toEqual([])
  })

  it('runs bash: send echo hi, read hi', async () => {
    await boot()
    const { id, result } = await create()
    expect(text(result)).toMatch(new RegExp(`^\\[terminal ${id} started: bash \\(pid \\d+\\) in ${dir}\\]\\n`))
    const sent = await call('terminal_send', { terminal_id: id, input: 'echo hi' })
    expect(sent.isError, text(sent)).toBe(false)
    const hasHi = (output: string) => output.split('\n').includes('hi')
    const seen = hasHi(text(sent)) ? text(sent) : await readUntil(id, hasHi)
    expect(seen.split('\n')).toContain('hi')
    expect(seen).not.toMatch(/[\x1b\r]/)

    const waited = await call('terminal_send', { terminal_id: id, input: 'echo $((6 * 7))', wait_for: '^42$' })
    expect(text(waited)).toMatch(/\n42\n(.*\n)?\[wait_for matched; the program is still running\]$/)
  })

  it('drives an interactive program with wait_for, then reports its exit', async () => {
    await boot()
    await writeFile(
      join(dir, 'ask.cjs'),
      "process.stdout.write('name? ')\nprocess.stdin.once('data', (data) => { console.log('hello ' + String(data).trim()); process.exit(0) })\n",
    )
    const { id, result } = await create({ command: `"${process.execPath}" ask.cjs` })
    expect(text(result)).toContain('name? ')
    const answered = await call('terminal_send', { terminal_id: id, input: 'Bob', wait_for: '^hello Bob$' })
    expect(answered.isError, text(answered)).toBe(false)
    expect(text(answered)).toContain('Bob\nhello Bob')
    await readUntil(id, (collected) => collected.includes('[the program has exited: exit code 0]'))
    const late = await call('terminal_send', { terminal_id: id, input: 'again' })
    expect(late.error?.code).toBe('TERMINAL_EXITED')
    expect(text(late)).toContain(`terminal ${id} has exited (exit code 0) and takes no more input`)
  })

  it('says how much output the buffer lost and how much the result leaves out', async () => {
    await boot({ bufferBytes: 1000 }, { maxOutputChars: 100 })
    const { id, result } = await create({ command: 'seq 1 1000' })
    let lost = Number(meta(result).droppedBytes)
    let outputs = text(result)
    let last = result
    while (meta(last).exited === undefined) {
      last = await call('terminal_read', { terminal_id: id, wait_ms: 2_000 })
      lost += Number(meta(last).droppedBytes)
      outputs += `\n${text(last)}`
    }
    // seq 1 1000 prints 3893 bytes; the buffer holds 1000, so at least 2893 never reached a result.
    expect(meta(last).offset).toBe(3893)
    expect(lost).toBeGreaterThanOrEqual(2893)
    expect(outputs).toMatch(
      /\[\d+ bytes of earlier output were lost: the terminal's buffer overflowed before they were read\]/,
    )
    expect(outputs).toMatch(/\[\d+ earlier characters are left out; showing the last 100\]/)
    expect(outputs).toContain('\n998\n999\n1000\n[the program has exited: exit code 0]')
  })

  it('kills a terminal and every process it started', async () => {
    await boot()
    const { id } = await create()
    const started = await call('terminal_send', {
      terminal_id: id,
      input: 'sleep 1000 & echo "PID=$!"',
      wait_for: 'PID=\\d+',
    })
    const job = Number(/PID=(\d+)/.exec(text(started))?.[1])
    expect(await alive(job)).toBe(true)
    const killed = await call('terminal_kill', { terminal_id: id })
    expect(text(killed)).toContain(`[terminal ${id} killed; all its processes have stopped]`)
    expect(await alive(job)).toBe(false)
    expect((await call('terminal_read', { terminal_id: id })).error?.code).toBe('TERMINAL_NOT_FOUND')
    expect(text(await call('terminal_list', {}))).toBe('(no terminals)')
  })

  it('stops every terminal process when the terminals plugin is disposed, and the tools go with it', async () => {
    await boot({}, { startupTimeoutMs: 300 })
    const { id: shell } = await create()
    const started = await call('terminal_send', {
      terminal_id: shell,
      input: 'sleep 1000 & echo "PID=$!"',
      wait_for: 'PID=\\d+',
    })
    const { id: command, result: silent } = await create({ command: 'sleep 1000' }, session('session-b'))
    expect(text(silent)).toContain('(no new output)\n[no output within 300ms; the program is still running]')
    const pids = [
      Number(/PID=(\d+)/.exec(text(started))?.[1]),
      root.terminals.get(shell as terminals.TerminalId)!.pid,
      root.terminals.get(command as terminals.TerminalId)!.pid,
    ]
    for (const pid of pids) expect(await alive(pid)).toBe(true)
    await terminalsFiber.dispose()
    for (const pid of pids) expect(await alive(pid)).toBe(false)
    expect(root.tools.get('terminal_send')).toBeUndefined()
  })

  it('gives the terminal the environment the subprocess policy builds', async () => {
    await boot()
    const planted = {
      SOME_TOKEN: 'leak-1',
      api_key: 'leak-2',
      MYSQL_PWD: 'leak-3',
      DATABASE_URL: 'postgres://u:leak-4@h/db',
      DSH_HOME: '/leak-5',
      GH_PAT: 'leak-6',
      PLAIN_SETTING: 'visible',
    }
    const saved = { ...process.env }
    Object.assign(process.env, planted)
    try {
      const { id, result } = await create({ command: 'env' })
      const all = `${text(result)}\n${await readUntil(id, (collected) => collected.includes('[the program has exited'))}`
      expect(all).not.toMatch(/leak-/)
      expect(all.split('\n')).toContain('PLAIN_SETTING=visible')
    } finally {
      for (const key of Object.keys(planted)) delete process.env[key]
      Object.assign(process.env, saved)
    }
  })

  it("keeps sessions apart: another session's terminal is refused by name", async () => {
    await boot({}, { startupTimeoutMs: 300 })
    const b = session('session-b')
    const { id } = await create({ command: 'sleep 1000' })
    for (const [name, args] of [
      ['terminal_send', { terminal_id: id, input: 'x' }],
      ['terminal_read', { terminal_id: id }],
      ['terminal_kill', { terminal_id: id }],
    ] as const) {
      const refused = await call(name, args, b)
      expect(refused.error?.code).toBe('TERMINAL_NOT_OWNED')
      expect(text(refused)).toContain(`terminal "${id}" belongs to another session`)
    }
    expect(text(await call('terminal_list', {}, b))).toBe('(no terminals)')
    expect(text(await call('terminal_list', {}))).toMatch(new RegExp(`^${id}  running  sleep 1000  \\(in ${dir}; `))
    expect(root.terminals.get(id as terminals.TerminalId)?.exited).toBeUndefined()
  })

  it('gives clear errors: unknown id, invalid regex, bad cwd, too many terminals, a wait that never matches', async () => {
    await boot({ maxPerSession: 1 }, { startupTimeoutMs: 300 })
    const unknown = await call('terminal_send', { terminal_id: 'term-nope', input: 'ls' })
    expect(unknown.error?.code).toBe('TERMINAL_NOT_FOUND')
    expect(text(unknown)).toContain('there is no terminal "term-nope"')

    const missing = await call('terminal_create', { cwd: 'no/such/dir' })
    expect(missing.error?.code).toBe('TERMINAL_SPAWN_FAILED')
    expect(text(missing)).toContain(join(dir, 'no/such/dir'))

    const { id } = await create({ command: 'cat' })
    const bad = await call('terminal_send', { terminal_id: id, input: 'typed', wait_for: '(' })
    expect(bad.error?.code).toBe('TERMINAL_INVALID_REGEX')
    expect(text(bad)).toContain('Nothing was sent')
    expect(root.terminals.read(id as terminals.TerminalId).text).not.toContain('typed')

    const full = await call('terminal_create', {})
    expect(full.error?.code).toBe('TERMINAL_LIMIT')
    expect(text(full)).toContain('terminal_kill frees one')

    const never = await call('terminal_send', { terminal_id: id, input: 'x', wait_for: 'never', timeout_ms: 200 })
    expect(never.isError).toBe(false)
    expect(text(never)).toContain('[wait_for did not match within 200ms; the program is still running]')

    const tooLong = await call('terminal_send', { terminal_id: id, input: 'x', timeout_ms: 10_000_000 })
    expect(tooLong.error?.code).toBe('INVALID_ARGUMENTS')
  })
})
