import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { type HttpTestHost, startHttpTestHost } from '@dsh/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { type RpcMessage, SdkWire } from './support/sdk-wire.ts'

// The fences whose legitimate twin needs someone to approve: an SDK client.
const t = useMockedHeadless()

const TEST_HOST = '127.0.0.2'
let testHost: HttpTestHost

beforeAll(async () => {
  testHost = await startHttpTestHost(TEST_HOST, 'mirror-answer')
})
afterAll(() => testHost.close())

async function approvingClient(): Promise<{ wire: SdkWire; sessionId: string }> {
  // other.test is not on the allowlist: the proxy must ask about it.
  mkdirSync(t.home, { recursive: true })
  writeFileSync(
    path.join(t.home, 'cordis.patch.yml'),
    `- id: sandbox-network\n  config:\n    allowedHosts: [registry.test]\n    staticHosts: { other.test: '${TEST_HOST}' }\n    publicRanges: ['${TEST_HOST}/32']\n` +
      // The escalation test needs bash's escalate parameter, which the seeds' schema leaves out by default.
      '- id: tool-bash\n  config:\n    allowEscalation: true\n',
  )
  const wire = new SdkWire(['--profile', 'sdk'], { home: t.home, cwd: t.work, env: t.env() })
  await wire.call('initialize', { protocolVersion: 1, clientInfo: { name: 'test' }, capabilities: { approvals: true } })
  const { sessionId } = await wire.call('session/new', { cwd: t.work, network: 'proxy' })
  return { wire, sessionId }
}

const fetchOther = (name: string) =>
  reply.toolCalls([
    {
      name: 'bash',
      arguments: {
        description: 'Run a command',
        command: `curl -sS --max-time 10 http://other.test:${testHost.port}/${name}; echo " [exit $?]"`,
      },
    },
  ])

describe('approvals the fences ask for, through the SDK', () => {
  it('network proxy: a host off the allowlist is asked about; allowed once it passes, rejected it does not', async () => {
    testHost.hits.length = 0
    t.mock.enqueue(fetchOther('first'), reply.text('fetched'), fetchOther('second'), reply.text('not fetched'))
    const { wire, sessionId } = await approvingClient()
    const answers: unknown[] = [{ decision: 'allow-once' }, { decision: 'reject' }]
    wire.answer = (request) => (request.method === 'approval/request' ? answers.shift() : undefined)

    await wire.call('session/prompt', { sessionId, content: 'fetch the first' })
    await wire.call('session/prompt', { sessionId, content: 'fetch the second' })
    expect(testHost.hits).toEqual([`other.test:${testHost.port}/first`])

    const asked = wire.received.filter((m) => m.method === 'approval/request').map((m) => m.params)
    expect(asked).toHaveLength(2)
    expect(asked[0]).toMatchObject({
      sessionId,
      toolCall: { name: 'bash', arguments: expect.stringContaining('other.test') },
    })
    expect(asked[0].reason).toContain(
      `wants to reach other.test:${testHost.port}, which is not on the network allowlist`,
    )
    const events: RpcMessage[] = (await wire.call('session/events', { sessionId })).events
    const decisions = events.filter((e) => e.type === 'network/decision').map((e) => e.data)
    expect(decisions).toEqual([
      expect.objectContaining({ host: 'other.test', decision: 'allow', by: 'user' }),
      expect.objectContaining({ host: 'other.test', decision: 'deny', by: 'user' }),
    ])
    const results = events.filter((e) => e.type === 'tool/result').map((e) => JSON.stringify(e.data))
    expect(results[0]).toContain('mirror-answer [exit 0]')
    expect(results[1]).toContain('the user did not allow it')
    expect(events.find((e) => e.type === 'permission/network')?.data).toEqual({ network: 'proxy' })
    expect((await wire.shutdown()).code).toBe(0)
  })

  it('protected paths: git init fails in the sandbox, and creates .git through an approved escalation', async () => {
    t.mock.enqueue(
      reply.toolCalls([
        { name: 'bash', arguments: { description: 'Run a command', command: 'git init -q . && echo initialised' } },
      ]),
      reply.toolCalls([
        {
          name: 'bash',
          arguments: {
            description: 'Run a command',
            command: 'git init -q . && echo initialised',
            escalate: true,
            justification: 'the user asked for a repository',
          },
        },
      ]),
      reply.text('Initialised.'),
    )
    const { wire, sessionId } = await approvingClient()
    wire.answer = (request) => (request.method === 'approval/request' ? { decision: 'allow-once' } : undefined)
    await wire.call('session/prompt', { sessionId, content: 'make this a git repository' })
    const results: string[] = (await wire.call('session/events', { sessionId })).events
      .filter((e: RpcMessage) => e.type === 'tool/result')
      .map((e: RpcMessage) => JSON.stringify(e.data))
    expect(results[0]).not.toContain('initialised')
    expect(results[1]).toContain('initialised')
    expect(existsSync(path.join(t.work, '.git', 'HEAD'))).toBe(true)
    expect(wire.received.filter((m) => m.method === 'approval/request')).toHaveLength(1)
    expect((await wire.shutdown()).code).toBe(0)
  })
})
