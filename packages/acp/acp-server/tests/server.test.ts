import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import * as acp from '@agentclientprotocol/sdk'
import * as agentPlugin from '@dsh/agent'
import * as conversationsPlugin from '@dsh/conversations'
import { Context } from '@dsh/cordis'
import * as fsPlugin from '@dsh/fs'
import * as permissionPlugin from '@dsh/permission'
import { SessionStore } from '@dsh/session'
import { ToolRuntime } from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AcpServer, Config } from '../src/index.ts'

/** Two ends of an in-memory ACP connection. */
function pipePair(): [acp.Stream, acp.Stream] {
  const toServer = new TransformStream<acp.AnyMessage, acp.AnyMessage>()
  const toClient = new TransformStream<acp.AnyMessage, acp.AnyMessage>()
  return [
    { readable: toServer.readable, writable: toClient.writable },
    { readable: toClient.readable, writable: toServer.writable },
  ]
}

let root: Context
let dir: string

beforeEach(async () => {
  dir = await realpath(await mkdtemp(path.join(tmpdir(), 'dsh-acp-')))
  root = new Context()
  await root.plugin(SessionStore)
  await root.plugin(ToolRuntime, {} as never)
  await root.plugin(permissionPlugin, {
    preset: 'workspace-write',
    approval: 'ask',
    network: { 'read-only': 'off', 'workspace-write': 'off' },
    extraWritableRoots: [],
  })
  await root.plugin(fsPlugin, {})
  await root.plugin(agentPlugin, { provider: 'none', model: 'none' })
  await root.plugin(conversationsPlugin)
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(dir, { recursive: true, force: true })
})

async function mountServer(): Promise<{ client: acp.ClientConnection; dispose: () => Promise<void> }> {
  const [server, client] = pipePair()
  const fiber = await root.plugin({
    name: 'acp-under-test',
    inject: ['agents', 'sessions', 'conversations', 'permission'],
    apply: (ctx: Context) => {
      const instance = new AcpServer(ctx, Config({} as never), server, '0.0.0-test')
      ctx.effect(() => () => instance.close())
    },
  })
  const connection = acp.client().connect(client)
  return { client: connection, dispose: async () => void (await fiber.dispose()) }
}

describe('AcpServer', () => {
  it('answers initialize with what is true here, and protocol errors for sessions it does not know', async () => {
    const { client } = await mountServer()
    const init = await client.agent.request(acp.methods.agent.initialize, { protocolVersion: 7 })
    expect(init).toEqual({
      protocolVersion: 1,
      agentInfo: { name: 'dsh', title: 'dsh', version: '0.0.0-test' },
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: false, audio: false, embeddedContext: true },
        mcpCapabilities: { http: false, sse: false },
        sessionCapabilities: { close: {}, list: {}, resume: {}, fork: {}, title: {}, delete: {} },
      },
      authMethods: [],
    })
    await expect(
      client.agent.request(acp.methods.agent.session.setMode, { sessionId: 'session-x', modeId: 'read-only' }),
    ).rejects.toMatchObject({
      code: -32002,
      message: expect.stringContaining('unknown session: session-x'),
    })
    // No agent driver is loaded: the failure reaches the client as an error, naming the cause.
    await expect(
      client.agent.request(acp.methods.agent.session.new, { cwd: dir, mcpServers: [] }),
    ).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining('no agent driver is loaded'),
    })
  })

  it('gives the approver back when disposed', async () => {
    const { dispose } = await mountServer()
    const approver = async () => ({ decision: 'allow-once' as const })
    expect(() => root.conversations.broker.setApprover(root, approver)).toThrow('a surface approver is already set')
    await dispose()
    const off = root.conversations.broker.setApprover(root, approver)
    off()
  })
})
