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

async function open(
  args: Record<string, unknown> = {},
  run: ToolRunOptions = A(),
): Promise<{ id: string; result: ToolResult }> {
  const result = await call('terminal_open', { type: 'shell', ...args }, run)
  expect(result.isError, text(result)).toBe(false)
  return { id: meta(result).terminalId as string, result }
}

/** Reads the terminal's held output until `done` says it is complete. */
async function readUntil(id: string, done: (held: string) => boolean, run: ToolRunOptions = A()): Promise<string> {
  for (;;) {
    const result = await call('terminal_read', { sessionId: id }, run)
    expect(result.isError, text(result)).toBe(false)
    if (done(text(result))) return text(result)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('presentation', () => {
  it.each([
    ['terminal_send', { sessionId: 't1', text: 'ls -la' }, 'Type into t1: ls -la'],
    ['terminal_send', { sessionId: 't1' }, 'Type into t1: (Enter)'],
    ['terminal_send', {}, 'Type into a terminal: (Enter)'],
    ['terminal_read', { sessionId: 't1' }, 'Read t1'],
    ['terminal_read', {}, 'Read a terminal'],
    ['terminal_close', { sessionId: 't1' }, 'Close t1'],
    ['terminal_close', {}, 'Close a terminal'],
    ['terminal_signal', { sessionId: 't1', signal: 'SIGINT' }, 'Send SIGINT to t1'],
    ['terminal_signal', {}, 'Send a signal to a terminal'],
    ['terminal_list', {}, 'List terminals'],
  ])('%s %j is titled %j', async (name, args, title) => {
    await boot()
    expect(root.tools.present({ name, arguments: JSON.stringify(args) }, dir).title).toBe(title)
  })
})

describe('terminal tools', () => {
  it("registers the seeds' six tools that declare their access, and removes them when disposed", async () => {
    const fiber = await boot()
    expect(root.tools.list().map((tool) => tool.name)).toEqual([
      'terminal_close',
      'terminal_list',
      'terminal_open',
      'terminal_read',
      'terminal_send',
      'terminal_signal',
    ])
    expect(root.tools.get('terminal_open')?.access?.({ type: 'shell', name: 'server' })).toEqual({
      kind: 'execute',
      escalated: true,
      summary: 'open a terminal "server"',
    })
    expect(root.tools.get('terminal_send')?.access?.({ sessionId: 'term-1', text: 'ls', submit: true })).toEqual({
      kind: 'execute',
      escalated: true,
      summary: 'term-1: ls',
    })
    expect(root.tools.get('terminal_close')?.access?.({ sessionId: 'term-1' })).toMatchObject({ kind: 'execute' })
    expect(root.tools.get('terminal_signal')?.access?.({ sessionId: 'term-1', signal: 'SIGINT' })).toMatchObject({
      kind: 'execute',
      escalated: true,
    })
    await fiber.dispose()
    expect(root.tools.list()).toEqual([])
  })

  it('runs bash: send echo hi, read hi', async () => {
    await boot()
    const { id, result } = await open({ name: 'main' })
    expect(text(result)).toMatch(new RegExp(`^\\[terminal ${id} "main" started: bash \\(pid \\d+\\) in ${dir}\\]\\n`))
    const sent = await call('terminal_send', { sessionId: id, text: 'echo hi' })
    expect(sent.isError, text(sent)).toBe(false)
    const hasHi = (output: string) => output.split('\n').includes('hi')
    const seen = hasHi(text(sent)) ? text(sent) : await readUntil(id, hasHi)
    expect(seen.split('\n')).toContain('hi')
    expect(seen).not.toMatch(/[\x1b\r]/)
    expect(text(await call('terminal_list', {}))).toMatch(new RegExp(`^${id} "main"  running  bash  \\(in ${dir}; `))
  })

  it('drives an interactive program, then reports its exit', async () => {
    await boot()
    await writeFile(
      join(dir, 'ask.cjs'),
      "process.stdout.write('name? ')\nprocess.stdin.once('data', (data) => { console.log('hello ' + String(data).trim()); process.exit(0) })\n",
    )
    const { id } = await open()
    await call('terminal_send', { sessionId: id, text: `exec "${process.execPath}" ask.cjs` })
    await readUntil(id, (held) => held.includes('name? '))
    await call('terminal_send', { sessionId: id, text: 'Bob' })
    const done = await readUntil(id, (held) => held.includes('[the program has exited: exit code 0]'))
    expect(done).toContain('hello Bob')
    const late = await call('terminal_send', { sessionId: id, text: 'again' })
    expect(late.error?.code).toBe('TERMINAL_EXITED')
    expect(text(late)).toContain(`terminal ${id} has exited (exit code 0) and takes no more input`)
  })

  it('reads pages of the held output counted back from the newest line', async () => {
    await boot()
    const { id } = await open()
    await call('terminal_send', { sessionId: id, text: 'seq 1 30; echo END' })
    await readUntil(id, (held) => held.split('\n').includes('END'))
    // The newest line is the prompt after END.
    const page = text(await call('terminal_read', { sessionId: id, offset: 2, count: 4 }))
    expect(page).toMatch(/^\[lines \d+-\d+ of \d+ held\]\n27\n28\n29\n30\n\[the program is still running\]$/)
  })

  it('says how much the result leaves out', async () => {
    await boot({}, { maxOutputChars: 100 })
    const { id } = await open()
    await call('terminal_send', { sessionId: id, text: 'seq 1 1000; echo END' })
    const held = await readUntil(id, (out) => out.includes('\nEND\n'))
    expect(held).toMatch(/\[\d+ earlier characters are left out; showing the last 100\]/)
  })

  it('sends a signal to the foreground program, and refuses SIGKILL at the bare shell', async () => {
    await boot()
    const { id } = await open()
    const shell = root.terminals.get(id as terminals.TerminalId)!.pid
    const sent = await call('terminal_send', { sessionId: id, text: 'sleep 1000', run_in_background: true })
    expect(text(sent)).toContain('read it with terminal_read')
    // Wait until sleep holds the terminal's foreground (field tpgid of the shell's stat).
    for (;;) {
      const stat = await readFile(`/proc/${shell}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[5]) !== shell) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const signalled = await call('terminal_signal', { sessionId: id, signal: 'SIGINT' })
    expect(signalled.isError, text(signalled)).toBe(false)
    expect(text(signalled)).not.toContain(`process group ${shell}]`)
    await call('terminal_send', { sessionId: id, text: 'echo "after=$?"' })
    await readUntil(id, (held) => held.includes('after=130'))
    const refused = await call('terminal_signal', { sessionId: id, signal: 'SIGKILL' })
    expect(refused.error?.code).toBe('TERMINAL_SIGNAL_REFUSED')
    expect(text(refused)).toContain('Use terminal_close')
    expect((await call('terminal_signal', { sessionId: id, signal: 'SIGSTOP' })).error?.code).toBe('INVALID_ARGUMENTS')
  })

  it('closes a terminal and every process it started', async () => {
    await boot()
    const { id } = await open()
    await call('terminal_send', { sessionId: id, text: 'sleep 1000 & echo "PID=$!"' })
    const started = await readUntil(id, (held) => /PID=\d+/.test(held))
    const job = Number(/PID=(\d+)/.exec(started)?.[1])
    expect(await subprocess.isRunning(job)).toBe(true)
    const closed = await call('terminal_close', { sessionId: id })
    expect(text(closed)).toContain(`[terminal ${id} closed; all its processes have stopped]`)
    expect(await subprocess.isRunning(job)).toBe(false)
    expect((await call('terminal_read', { sessionId: id })).error?.code).toBe('TERMINAL_NOT_FOUND')
    expect(text(await call('terminal_list', {}))).toBe('(no terminals)')
  })

  it('stops every terminal process when the terminals plugin is disposed, and the tools go with it', async () => {
    await boot({}, { startupTimeoutMs: 300 })
    const { id: shell } = await open()
    await call('terminal_send', { sessionId: shell, text: 'sleep 1000 & echo "PID=$!"' })
    const started = await readUntil(shell, (held) => /PID=\d+/.test(held))
    const { id: other } = await open({}, session('session-b'))
    const pids = [
      Number(/PID=(\d+)/.exec(started)?.[1]),
      root.terminals.get(shell as terminals.TerminalId)!.pid,
      root.terminals.get(other as terminals.TerminalId)!.pid,
    ]
    for (const pid of pids) expect(await subprocess.isRunning(pid)).toBe(true)
    await terminalsFiber.dispose()
    for (const pid of pids) expect(await subprocess.isRunning(pid)).toBe(false)
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
      const { id } = await open()
      await call('terminal_send', { sessionId: id, text: 'env; echo ENV-DONE' })
      const all = await readUntil(id, (held) => held.split('\n').includes('ENV-DONE'))
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
    const { id } = await open()
    for (const [name, args] of [
      ['terminal_send', { sessionId: id, text: 'x' }],
      ['terminal_read', { sessionId: id }],
      ['terminal_signal', { sessionId: id, signal: 'SIGINT' }],
      ['terminal_close', { sessionId: id }],
    ] as const) {
      const refused = await call(name, args, b)
      expect(refused.error?.code).toBe('TERMINAL_NOT_OWNED')
      expect(text(refused)).toContain(`terminal "${id}" belongs to another session`)
    }
    expect(text(await call('terminal_list', {}, b))).toBe('(no terminals)')
    expect(root.terminals.get(id as terminals.TerminalId)?.exited).toBeUndefined()
  })

  it('gives clear errors: unknown id, unknown type, bad cwd, too many terminals', async () => {
    await boot({ maxPerSession: 1 }, { startupTimeoutMs: 300 })
    const unknown = await call('terminal_send', { sessionId: 'term-nope', text: 'ls' })
    expect(unknown.error?.code).toBe('TERMINAL_NOT_FOUND')
    expect(text(unknown)).toContain('there is no terminal "term-nope"')

    const type = await call('terminal_open', { type: 'python' })
    expect(type.error?.code).toBe('TERMINAL_UNKNOWN_TYPE')
    expect(text(type)).toContain('the only type is "shell"')

    const missing = await call('terminal_open', { type: 'shell', cwd: 'no/such/dir' })
    expect(missing.error?.code).toBe('TERMINAL_SPAWN_FAILED')
    expect(text(missing)).toContain(join(dir, 'no/such/dir'))

    await open()
    const full = await call('terminal_open', { type: 'shell' })
    expect(full.error?.code).toBe('TERMINAL_LIMIT')
    expect(text(full)).toContain('terminal_close frees one')
  })
})
