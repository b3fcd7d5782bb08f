import { readFileSync } from 'node:fs'
import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Context as Ctx, Context, type Fiber } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import * as subprocess from '@dsh/subprocess'
import type { EnvironmentPolicyConfig, LocalSubprocessConfig } from '@dsh/subprocess'
import { type ToolResult, ToolRuntime } from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as mcp from '../src/index.ts'
import { Config, type McpConfig, type McpServerConfig, toolName } from '../src/index.ts'
import { PIXEL, serveHttp, TOOLS } from './fixtures/tools.mjs'
import { collectWarnings, withEnvironment } from '@dsh/testkit'

/** The names the fixture server's tools get as server "fx", sorted. */
const FX_TOOLS = ['mcp__fx__add', 'mcp__fx__env', 'mcp__fx__fail', 'mcp__fx__pixel', 'mcp__fx__write_marker']
const fixture = fileURLToPath(new URL('./fixtures/server.mjs', import.meta.url))
const stdio = (...modes: string[]): McpServerConfig => ({ command: process.execPath, args: [fixture, ...modes] })

let root: Context
let warnings: string[]
let dir: string
let subprocessFiber: Fiber

beforeEach(async () => {
  root = new Context()
  warnings = collectWarnings(root)
  await root.plugin(ToolRuntime, {} as never)
  subprocessFiber = root.plugin(subprocess, {} as LocalSubprocessConfig)
  await subprocessFiber
  dir = await mkdtemp(path.join(os.tmpdir(), 'dsh-mcp-'))
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(dir, { recursive: true, force: true })
})

const fast = { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 3 }
/** The plugin's config with its defaults filled in. */
const settings = (partial: Partial<McpConfig>) => Config(partial as McpConfig)

async function boot(config: Partial<McpConfig>) {
  const fiber = root.plugin(mcp, settings({ reconnect: fast, ...config }))
  await fiber
  return fiber
}

/** Resolves once the servers' first attempts are over, the way the first step of an agent waits. */
function firstStep(): Promise<unknown> {
  return root.waterfall(
    'agent/pre-step',
    {} as never,
    { turn: 1, step: 1, signal: new AbortController().signal },
    async () => ({ kind: 'enter' as const }),
  )
}

let calls = 0
function invoke(name: string, args: Record<string, unknown>): Promise<ToolResult> {
  calls += 1
  return root.tools.execute(
    { callId: `call-${calls}` as ToolCallId, name, arguments: JSON.stringify(args) },
    { signal: new AbortController().signal, cwd: dir, sessionId: 'session-1', sessionState: new Map() },
  )
}

/**
 * Starts `server` as `fx`, and checks the value its `env` tool reports for each variable `expected` names
 * (`(unset)`: the server did not get it).
 */
async function expectServerEnvironment(server: McpServerConfig, expected: Record<string, string | undefined>) {
  await boot({ servers: { fx: server } })
  await firstStep()
  const values: Record<string, string> = {}
  for (const name of Object.keys(expected)) values[name] = text(await invoke('mcp__fx__env', { name }))
  expect(values).toEqual(expected)
}
const text = (result: ToolResult) => result.content.map((b) => (b.type === 'text' ? b.text : `<${b.type}>`)).join('\n')
const mcpTools = () =>
  root.tools
    .schemas()
    .map((s) => s.name)
    .filter((n) => n.startsWith('mcp__'))

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  if (!check()) throw new Error(`gave up waiting for ${what}; warnings: ${warnings.join(' | ')}`)
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('a stdio server', () => {
  it('registers its tools as mcp__<server>__<tool> with their schemas as given, before the first step', async () => {
    await boot({ servers: { fx: stdio() } })
    await firstStep()
    expect(mcpTools()).toEqual(FX_TOOLS)
    const add = TOOLS.find((tool) => tool.name === 'add')
    expect(root.tools.schemas().find((s) => s.name === 'mcp__fx__add')).toEqual({
      name: 'mcp__fx__add',
      description: 'Add two numbers.',
      parameters: add?.inputSchema,
    })
    expect(add?.inputSchema).toMatchObject({ additionalProperties: false })
    expect(root.mcp.list()).toEqual([{ name: 'fx', status: 'connected', tools: expect.arrayContaining(mcpTools()) }])
    expect(warnings).toEqual([])
  })

  it('runs calls: text as text, images as image blocks, isError as an error result, bad arguments from the server', async () => {
    await boot({ servers: { fx: stdio() } })
    await firstStep()
    const sum = await invoke('mcp__fx__add', { a: 2, b: 3 })
    expect(sum).toMatchObject({
      isError: false,
      content: [{ type: 'text', text: '5' }],
      meta: { server: 'fx', tool: 'add' },
    })
    const image = await invoke('mcp__fx__pixel', {})
    expect(image.content).toEqual([
      { type: 'text', text: 'one pixel:' },
      { type: 'image', mediaType: 'image/png', data: PIXEL },
    ])
    const failed = await invoke('mcp__fx__fail', {})
    expect(failed.error).toEqual({ code: 'MCP_TOOL_ERROR', message: 'Error: the fixture failed on purpose' })
    const wrong = await invoke('mcp__fx__add', { a: 'two' })
    expect(wrong.isError).toBe(true)
    expect(text(wrong)).toMatch(/^Error: /)
  })

  it('declares its calls escalated, so only danger-full-access runs them without asking', async () => {
    await boot({ servers: { fx: stdio() } })
    await firstStep()
    expect(root.tools.get('mcp__fx__add')?.access?.({})).toEqual({
      kind: 'other',
      escalated: true,
      summary: 'tool "add" of MCP server "fx", which runs outside the sandbox',
    })
  })

  it('starts the server with a scrubbed environment plus its own variables', async () => {
    const leaky = { FIXTURE_API_TOKEN: 'do-not-leak', DSH_FIXTURE_SETTING: 'internal' }
    const seen = {
      FIXTURE_API_TOKEN: '(unset)',
      DSH_FIXTURE_SETTING: '(unset)',
      GREETING: 'hello',
      PATH: process.env.PATH,
    }
    await withEnvironment(leaky, () => expectServerEnvironment({ ...stdio(), env: { GREETING: 'hello' } }, seen))
  })

  it('starts the server with the environment the subprocess policy builds, even what the SDK would add', async () => {
    await subprocessFiber.dispose()
    const policy: EnvironmentPolicyConfig = {
      inherit: 'core',
      ignoreDefaultExcludes: false,
      exclude: ['HOME'],
      includeOnly: [],
      set: { FROM_POLICY: 'set' },
    }
    await root.plugin(subprocess, { environment: policy } as LocalSubprocessConfig)
    // The SDK puts HOME under every server's environment; the policy excluded it.
    const seen = { FROM_POLICY: 'set', FIXTURE_PLAIN: '(unset)', HOME: '(unset)', PATH: process.env.PATH }
    await withEnvironment({ FIXTURE_PLAIN: 'not core' }, () => expectServerEnvironment(stdio(), seen))
  })

  it('skips tools with malformed schemas, naming the server and the tool, and keeps the others', async () => {
    await boot({ servers: { fx: stdio('--malformed') } })
    await firstStep()
    expect(mcpTools()).toContain('mcp__fx__add')
    expect(mcpTools()).not.toContain('mcp__fx__stringly')
    expect(mcpTools()).not.toContain('mcp__fx__bad_props')
    expect(warnings).toEqual([
      expect.stringMatching(/server "fx": tool "stringly" skipped, its definition is malformed: inputSchema\.type: /),
      expect.stringMatching(
        /server "fx": tool "bad_props" skipped, its definition is malformed: inputSchema\.properties: /,
      ),
    ])
  })

  it('reports a server that fails to start with its stderr, retries with backoff, then gives up', async () => {
    await boot({ servers: { broken: stdio('--crash-on-start'), fx: stdio() }, reconnect: { ...fast, maxAttempts: 1 } })
    await firstStep()
    expect(warnings[0]).toMatch(
      /server "broken" failed to start \(.*Connection closed; stderr: fixture: cannot start, the database is missing\); retrying in 5ms/,
    )
    await until(
      () => root.mcp.list().find((s) => s.name === 'broken')?.status === 'failed',
      'the broken server to be given up',
    )
    expect(warnings.at(-1)).toMatch(/server "broken" failed to start \(.*\); giving up after 2 attempts/)
    expect(mcpTools()).toEqual(FX_TOOLS)
    expect(text(await invoke('mcp__fx__add', { a: 1, b: 1 }))).toBe('2')
  })

  it('reports a command that does not exist', async () => {
    await boot({
      servers: { ghost: { command: path.join(dir, 'no-such-server') } },
      reconnect: { ...fast, maxAttempts: 0 },
    })
    await firstStep()
    expect(warnings).toEqual([
      expect.stringMatching(/server "ghost" failed to start \(.*ENOENT.*\); giving up after 1 attempts/),
    ])
  })

  it('removes the tools of a server that died and brings them back when it reconnects', async () => {
    const starts = path.join(dir, 'starts')
    await boot({ servers: { fx: stdio('--die-after-first-call', '--starts', starts) } })
    await firstStep()
    const present: boolean[] = []
    root.on('tools/changed', () => void present.push(root.tools.get('mcp__fx__add') !== undefined))
    expect(text(await invoke('mcp__fx__add', { a: 2, b: 2 }))).toBe('4')
    await until(
      () => present.includes(false) && present.at(-1) === true && root.mcp.list()[0]?.status === 'connected',
      'the server to come back',
    )
    expect(readFileSync(starts, 'utf8').trim().split('\n')).toHaveLength(2)
    expect(warnings).toEqual([
      expect.stringMatching(/server "fx" stopped \(the connection closed\); its tools are gone until it reconnects/),
    ])
    expect(text(await invoke('mcp__fx__add', { a: 3, b: 3 }))).toBe('6')
  })

  it('ends the server process when the plugin is disposed, and its tools go with it', async () => {
    const starts = path.join(dir, 'starts')
    const fiber = await boot({ servers: { fx: stdio('--starts', starts) } })
    await firstStep()
    const pid = Number(readFileSync(starts, 'utf8').trim())
    expect(alive(pid)).toBe(true)
    await fiber.dispose()
    expect(mcpTools()).toEqual([])
    await until(() => !alive(pid), 'the server process to end')
  })
})

describe('a streamable HTTP server', () => {
  let http: HttpServer | undefined
  let served: Awaited<ReturnType<typeof serveHttp>> | undefined
  // Runs before the outer afterEach disposes the plugin, whose client still holds a keep-alive connection.
  afterEach(async () => {
    await served?.close()
    served = undefined
    http?.closeAllConnections()
    await new Promise<void>((resolve) => (http ? http.close(() => resolve()) : resolve()))
    http = undefined
  })

  it('registers its tools and runs calls over HTTP', async () => {
    served = await serveHttp()
    await boot({ servers: { web: { url: served.url } } })
    await firstStep()
    expect(mcpTools()).toEqual(expect.arrayContaining(['mcp__web__add', 'mcp__web__pixel', 'mcp__web__fail']))
    const sum = await invoke('mcp__web__add', { a: 2, b: 3 })
    expect(sum.isError).toBeFalsy()
    expect(text(sum)).toBe('5')
    expect((await invoke('mcp__web__fail', {})).isError).toBe(true)
    expect(served.stats.requests).toBeGreaterThan(2)
  })

  it('reports a server that answers with an HTTP error, naming it', async () => {
    http = createServer((_req, res) => res.writeHead(503).end('down for maintenance'))
    await new Promise<void>((resolve) => http?.listen(0, '127.0.0.1', resolve))
    await boot({ servers: { down: { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` } } })
    await firstStep()
    expect(mcpTools()).toEqual([])
    await until(() => warnings.some((w) => w.includes('"down"')), 'a warning about the server')
  })
})

describe('config', () => {
  it('refuses a bad server name or a server with neither command nor url, naming it', async () => {
    await expect(root.plugin(mcp, settings({ servers: { 'bad name': stdio() } }))).rejects.toThrow(
      /server name "bad name" must be/,
    )
    await expect(root.plugin(mcp, settings({ servers: { web: { url: 'ftp://example.com' } } }))).rejects.toThrow(
      /server "web": url "ftp:\/\/example.com" must be http or https/,
    )
    warnings.length = 0
  })

  it('names tools that are not plain enough with a stable hash', () => {
    expect(toolName('fx', 'add')).toBe('mcp__fx__add')
    const odd = toolName('fx', 'read file.v2')
    expect(odd).toMatch(/^mcp__fx__read_file_v2_[0-9a-f]{12}$/)
    expect(toolName('fx', 'read file.v2')).toBe(odd)
    expect(toolName('fx', 'x'.repeat(100))).toHaveLength(64)
  })
})

describe('servers connected at runtime', () => {
  it('belong to the context that connected them and close with it', async () => {
    await boot({})
    let owner!: Ctx
    const surface = root.plugin({ name: 'surface', inject: ['mcp'], apply: (ctx: Ctx) => void (owner = ctx) })
    await surface
    await owner.mcp.connect(owner, 'fx', stdio())
    expect(mcpTools()).toContain('mcp__fx__add')
    expect(text(await invoke('mcp__fx__add', { a: 20, b: 22 }))).toBe('42')
    await expect(owner.mcp.connect(owner, 'fx', stdio())).rejects.toThrow(/a server named "fx" is already connected/)
    await surface.dispose()
    expect(mcpTools()).toEqual([])
    expect(root.mcp.list()).toEqual([])
  })

  it('close through the disposer connect returns', async () => {
    await boot({})
    const dispose = await root.mcp.connect(root, 'fx', stdio())
    expect(mcpTools()).toContain('mcp__fx__add')
    await dispose()
    expect(mcpTools()).toEqual([])
    expect(root.mcp.list()).toEqual([])
  })

  it('resolve even when the server fails to start, which is reported', async () => {
    await boot({ reconnect: { ...fast, maxAttempts: 0 } })
    await root.mcp.connect(root, 'broken', stdio('--crash-on-start'))
    expect(root.mcp.list()).toMatchObject([
      { name: 'broken', status: 'failed', tools: [], error: expect.stringContaining('database is missing') },
    ])
    expect(warnings).toEqual([expect.stringContaining('server "broken" failed to start')])
  })
})
