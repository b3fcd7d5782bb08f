// The server mounted in-process on stream pairs (the protocol flows run
// against the real bin in apps/cli/tests/sdk.test.ts): what it registers
// goes away with it.
import { PassThrough } from 'node:stream'
import * as agent from '@dsh/agent'
import * as conversations from '@dsh/conversations'
import { Context, type Fiber } from '@dsh/cordis'
import * as permission from '@dsh/permission'
import { LineSplitter } from '@dsh/sdk-protocol'
import * as session from '@dsh/session'
import * as tools from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Config, SdkServer } from '../src/index.ts'

let root: Context
let input: PassThrough
let output: PassThrough
let lines: Array<Record<string, any>>
let stopped = 0

beforeEach(async () => {
  root = new Context()
  await root.plugin(session)
  await root.plugin(tools, {} as never)
  await root.plugin(permission, {
    preset: 'workspace-write',
    approval: 'ask',
    network: { 'read-only': 'off', 'workspace-write': 'off' },
    extraWritableRoots: [],
  })
  await root.plugin(agent, { provider: 'deepseek', model: 'deepseek-v4-flash' })
  await root.plugin(conversations)
  lines = []
  stopped = 0
})
afterEach(() => root.fiber.dispose())

function mount(): Fiber {
  input = new PassThrough()
  output = new PassThrough()
  const splitter = new LineSplitter(
    Infinity,
    (line) => lines.push(JSON.parse(line)),
    () => {},
  )
  output.on('data', (chunk: Buffer) => splitter.push(chunk))
  return root.plugin({
    name: 'sdk-test',
    inject: ['agents', 'sessions', 'conversations'],
    apply: (ctx: Context) => void new SdkServer(ctx, Config({}), { input, output }, () => stopped++),
  })
}

async function call(id: number, method: string, params?: unknown): Promise<Record<string, any>> {
  input.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`)
  for (;;) {
    const found = lines.find((line) => line.id === id)
    if (found) return found
    await new Promise((resolve) => setImmediate(resolve))
  }
}

const noop = async () => ({ decision: 'allow-once' as const })

describe('SdkServer', () => {
  it('holds the approver slot while it is mounted, and gives it back when disposed', async () => {
    const fiber = mount()
    await fiber
    const init = await call(1, 'initialize', { protocolVersion: 1, capabilities: { approvals: true, questions: true } })
    // No questions plugin in this tree: only approvals are granted.
    expect(init.result.capabilities).toEqual({ approvals: true, questions: false })
    expect(() => root.conversations.broker.setApprover(root, noop)).toThrow(/already set/)
    await fiber.dispose()
    const off = root.conversations.broker.setApprover(root, noop)
    off()
  })

  it('stops answering and notifying once disposed', async () => {
    const fiber = mount()
    await fiber
    await call(1, 'initialize', { protocolVersion: 1 })
    await fiber.dispose()
    input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'session/list' })}\n`)
    const created = root.sessions.create({ cwd: '/tmp' })
    created.append('turn/start', { turn: 1 })
    await new Promise((resolve) => setImmediate(resolve))
    expect(lines.map((line) => line.id ?? line.method)).toEqual([1])
  })

  it('sends session events only after initialize', async () => {
    await mount()
    root.sessions.create({ cwd: '/tmp' }).append('turn/start', { turn: 1 })
    await call(1, 'initialize', { protocolVersion: 1 })
    const later = root.sessions.create({ cwd: '/tmp' })
    later.append('turn/start', { turn: 1 })
    await new Promise((resolve) => setImmediate(resolve))
    expect(lines.filter((line) => line.method === 'session/event').map((line) => line.params.sessionId)).toEqual([
      later.id,
    ])
  })

  it('answers shutdown, then reports that it stopped', async () => {
    await mount()
    expect((await call(1, 'shutdown')).result).toEqual({})
    while (stopped === 0) await new Promise((resolve) => setImmediate(resolve))
    expect((await call(2, 'initialize', { protocolVersion: 1 })).error).toMatchObject({ code: -32005 })
  })
})
