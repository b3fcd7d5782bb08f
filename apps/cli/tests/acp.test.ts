import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type * as acp from '@agentclientprotocol/sdk'
import { reply } from '@dsh/llm-mock'
import { type DshProcess, type DshResult, repoRoot, startDsh } from '@dsh/testkit'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { AcpTestClient, type AcpClientOptions, chunkText } from './support/acp.ts'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()
/** Every dsh a test started, closed after it (if the test did not) so that a failure leaves no process behind. */
let running: Array<{ process: DshProcess; close(): Promise<DshResult> }> = []

function start(options: Partial<AcpClientOptions> = {}): AcpTestClient {
  const client = new AcpTestClient({ home: t.home, cwd: t.work, env: t.env(), ...options })
  running.push(client)
  return client
}

afterEach(async () => {
  for (const dsh of running)
    if (dsh.process.child.exitCode === null && dsh.process.child.signalCode === null) await dsh.close()
  running = []
})

/** A session's stored events, read after its process has exited. */
async function storedLog(sessionId: string) {
  return (await readSessionLog(t.home, sessionId)).events
}

/** The tool_call and tool_call_update updates of one call. */
function toolUpdates(updates: acp.SessionUpdate[], toolCallId: string): acp.ToolCallUpdate[] {
  return updates.filter(
    (u) => (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') && u.toolCallId === toolCallId,
  ) as acp.ToolCallUpdate[]
}

describe('dsh --profile acp', { timeout: 60_000 }, () => {
  it('initializes, creates a session and streams a prompt with tool calls as session updates', async () => {
    writeFileSync(path.join(t.work, 'app.cfg'), 'version = 1\n')
    t.mock.enqueue(
      reply.toolCalls(
        [
          {
            id: 'call_bash',
            name: 'bash',
            arguments: { description: 'Run a command', command: 'echo counted $((2+3))' },
          },
        ],
        {
          reasoning: 'Count first.',
        },
      ),
      reply.toolCalls([{ id: 'call_read', name: 'read', arguments: { file_path: 'app.cfg' } }], {
        content: 'Reading it.',
      }),
      reply.toolCalls([
        {
          id: 'call_edit',
          name: 'edit',
          arguments: { file_path: 'app.cfg', old_string: 'version = 1', new_string: 'version = 2' },
        },
      ]),
      reply.text('Bumped the version to 2.'),
    )
    const client = start()
    const init = await client.initialize()
    expect(init.protocolVersion).toBe(1)
    expect(init.agentInfo?.name).toBe('dsh')
    expect(init.agentCapabilities).toMatchObject({
      loadSession: true,
      promptCapabilities: { image: false, audio: false, embeddedContext: true },
      sessionCapabilities: { close: {} },
    })
    expect(init.authMethods).toEqual([])

    const session = await client.newSession()
    expect(session.sessionId).toMatch(/^session-/)
    expect(session.modes?.currentModeId).toBe('workspace-write')
    expect(session.modes?.availableModes.map((m) => m.id)).toEqual([
      'read-only',
      'workspace-write',
      'danger-full-access',
      'plan',
    ])

    const result = await client.prompt(session.sessionId, 'bump the version')
    expect(result.stopReason).toBe('end_turn')
    const updates = client.updatesOf(session.sessionId)
    expect(chunkText(updates, 'agent_thought_chunk')).toBe('Count first.')
    expect(chunkText(updates, 'agent_message_chunk')).toBe('Reading it.Bumped the version to 2.')

    const bash = toolUpdates(updates, 'call_bash')
    expect(bash[0]).toMatchObject({
      sessionUpdate: 'tool_call',
      kind: 'execute',
      status: 'pending',
      title: '`echo counted $((2+3))`',
    })
    expect(bash.map((u) => u.status)).toEqual(['pending', 'in_progress', 'completed'])
    expect(bash.at(-1)?.content).toEqual([
      {
        type: 'content',
        content: { type: 'text', text: expect.stringMatching(/^```console\n[\s\S]*counted 5[\s\S]*\n```$/) },
      },
    ])

    const file = path.join(t.work, 'app.cfg')
    const read = toolUpdates(updates, 'call_read')
    expect(read[0]).toMatchObject({
      kind: 'read',
      title: 'Read app.cfg',
      locations: [{ path: file }],
      rawInput: { file_path: 'app.cfg' },
    })
    expect(JSON.stringify(read.at(-1))).toContain('version = 1')
    const edit = toolUpdates(updates, 'call_edit')
    expect(edit[0]).toMatchObject({
      kind: 'edit',
      title: 'Edit app.cfg',
      locations: [{ path: file }],
      content: [{ type: 'diff', path: file, oldText: 'version = 1', newText: 'version = 2' }],
    })
    expect(edit.map((u) => u.status)).toEqual(['pending', 'in_progress', 'completed'])
    expect(readFileSync(file, 'utf8')).toBe('version = 2\n')

    const closed = await client.close()
    expect(closed.code).toBe(0)
    expect(closed.stderr).toBe('')
  })

  it('reports context use and the cumulative cost of deepseek-v4-flash as usage_update after each prompt', async () => {
    t.mock.enqueue(
      reply.completion({
        content: 'One.',
        usage: { promptCacheMissTokens: 900, promptCacheHitTokens: 100, completionTokens: 20 },
      }),
      reply.completion({
        content: 'Two.',
        usage: { promptCacheMissTokens: 50, promptCacheHitTokens: 1000, completionTokens: 30 },
      }),
    )
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession()
    await client.prompt(sessionId, 'first')
    const first = client.updatesOf(sessionId).filter((u) => u.sessionUpdate === 'usage_update')
    // List price per million tokens: $0.14 missed, $0.0028 cached, $0.28 output.
    const firstCost = (900 * 0.14 + 100 * 0.0028 + 20 * 0.28) / 1e6
    expect(first).toEqual([
      {
        sessionUpdate: 'usage_update',
        used: 1020,
        size: 1_000_000,
        cost: { amount: expect.any(Number), currency: 'USD' },
      },
    ])
    expect((first[0] as { cost: { amount: number } }).cost.amount).toBeCloseTo(firstCost, 12)
    await client.prompt(sessionId, 'second')
    const both = client.updatesOf(sessionId).filter((u) => u.sessionUpdate === 'usage_update')
    expect(both).toHaveLength(2)
    expect(both[1]).toMatchObject({ used: 1080, size: 1_000_000 })
    const total = firstCost + (50 * 0.14 + 1000 * 0.0028 + 30 * 0.28) / 1e6
    expect((both[1] as { cost: { amount: number } }).cost.amount).toBeCloseTo(total, 12)
  })

  it('a write over an existing file ends with the diff of the real old text; a new file with oldText null', async () => {
    writeFileSync(path.join(t.work, 'notes.md'), 'one\ntwo\nthree\n')
    t.mock.enqueue(
      reply.toolCalls([
        { id: 'call_over', name: 'write', arguments: { file_path: 'notes.md', content: 'one\n2\nthree\n' } },
        { id: 'call_new', name: 'write', arguments: { file_path: 'fresh.md', content: 'new\n' } },
      ]),
      reply.text('Rewrote it.'),
    )
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession()
    expect((await client.prompt(sessionId, 'rewrite the notes')).stopReason).toBe('end_turn')
    const updates = client.updatesOf(sessionId)
    const over = toolUpdates(updates, 'call_over')
    const file = path.join(t.work, 'notes.md')
    // Announced before it runs from the arguments alone, then completed with the text it replaced.
    expect(over[0]?.content).toEqual([{ type: 'diff', path: file, oldText: null, newText: 'one\n2\nthree\n' }])
    expect(over.at(-1)).toMatchObject({
      status: 'completed',
      content: [{ type: 'diff', path: file, oldText: 'one\ntwo\nthree\n', newText: 'one\n2\nthree\n' }],
    })
    const fresh = toolUpdates(updates, 'call_new')
    expect(fresh.at(-1)?.status).toBe('completed')
    expect(fresh.at(-1)?.content).toBeUndefined()
    // The model got the diff too.
    const toolMessages = t.mock.requests[1]?.body.messages.filter((m: { role: string }) => m.role === 'tool')
    expect(toolMessages.map((m: { content: string }) => m.content)).toEqual([
      `Overwrote notes.md (12 bytes written).\n\n--- notes.md\n+++ notes.md\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three`,
      'Created fresh.md (4 bytes written).',
    ])
    expect((await client.close()).code).toBe(0)
  })

  it('takes the network of sandboxed commands from session/new _meta; a bad value is -32602', async () => {
    t.mock.enqueue(
      reply.toolCalls([
        {
          id: 'call_net',
          name: 'bash',
          arguments: {
            description: 'Run a command',
            command: 'curl -sS --max-time 5 http://registry.npmjs.org/ ; echo " [exit $?]"',
          },
        },
      ]),
      reply.text('No network.'),
    )
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession(t.work, [], { network: 'off' })
    await client.prompt(sessionId, 'try the network')
    await expect(client.newSession(t.work, [], { network: 'wide' })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('_meta.network'),
    })
    await client.close()
    const events = await storedLog(sessionId)
    expect(events.filter((e) => e.type === 'permission/network').map((e) => e.data)).toEqual([{ network: 'off' }])
    // Off: no proxy either, so no decision was logged and the command could not connect.
    expect(events.some((e) => e.type === 'network/decision')).toBe(false)
    const result = events.find((e) => e.type === 'tool/result')
    expect(JSON.stringify(result?.data)).not.toContain('[exit 0]')
  })

  it('sends the todo list as a plan, whole each time it changes', async () => {
    const todos = (second: 'in_progress' | 'completed') => [
      { content: 'Read the code', status: 'completed' },
      { content: 'Fix the bug', status: second },
    ]
    t.mock.enqueue(
      reply.toolCalls([{ id: 'call_plan_1', name: 'todo_write', arguments: { todos: todos('in_progress') } }]),
      reply.toolCalls([{ id: 'call_plan_2', name: 'todo_write', arguments: { todos: todos('completed') } }]),
      reply.text('All done.'),
    )
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession()
    await client.prompt(sessionId, 'fix the bug')
    const updates = client.updatesOf(sessionId)
    const plans = updates.filter((u) => u.sessionUpdate === 'plan')
    expect(plans).toEqual([
      {
        sessionUpdate: 'plan',
        entries: [
          { content: 'Read the code', status: 'completed', priority: 'medium' },
          { content: 'Fix the bug', status: 'in_progress', priority: 'medium' },
        ],
      },
      {
        sessionUpdate: 'plan',
        entries: [
          { content: 'Read the code', status: 'completed', priority: 'medium' },
          { content: 'Fix the bug', status: 'completed', priority: 'medium' },
        ],
      },
    ])
    expect(toolUpdates(updates, 'call_plan_1')[0]).toMatchObject({ kind: 'think', title: 'Update the todo list' })
  })

  it("shows a plugin's tool by its own presentation: title, kind and fenced terminal output, with no change to the ACP server", async () => {
    const patch = path.join(t.root, 'deploy.patch.yml')
    writeFileSync(
      patch,
      `- insert:\n    - id: deploy-tool\n      name: ${JSON.stringify(path.join(import.meta.dirname, 'fixtures/deploy-tool.mjs'))}\n`,
    )
    t.mock.enqueue(
      reply.toolCalls([{ id: 'call_deploy', name: 'deploy', arguments: { target: path.join(t.work, 'site') } }]),
      reply.text('Deployed.'),
    )
    const client = start({ args: ['--patch', patch] })
    await client.initialize()
    const { sessionId } = await client.newSession()
    client.permissionAnswers.push('allow_once')
    expect((await client.prompt(sessionId, 'deploy the site')).stopReason).toBe('end_turn')
    const deploy = toolUpdates(client.updatesOf(sessionId), 'call_deploy')
    expect(deploy[0]).toMatchObject({
      sessionUpdate: 'tool_call',
      kind: 'execute',
      title: 'Deploy site',
      rawInput: { target: path.join(t.work, 'site') },
    })
    expect(deploy.at(-1)).toMatchObject({
      status: 'completed',
      content: [
        {
          type: 'content',
          content: { type: 'text', text: `\`\`\`console\ndeployed ${path.join(t.work, 'site')}\n\`\`\`` },
        },
      ],
    })
    await client.close()
  })

  it('connects the MCP servers of session/new for that session only, and disconnects them with it', async () => {
    t.mock.enqueue(
      reply.toolCalls([{ id: 'call_add', name: 'mcp__adder__add', arguments: { a: 2, b: 3 } }]),
      reply.text('2 + 3 = 5.'),
      reply.text('No adder here.'),
    )
    const client = start()
    const init = await client.initialize()
    expect(init.agentCapabilities?.mcpCapabilities).toEqual({ http: true, sse: false })
    const adder: acp.McpServer = {
      name: 'adder',
      command: process.execPath,
      args: [
        path.join(repoRoot, 'packages/mcp/mcp/tests/fixtures/server.mjs'),
        '--starts',
        path.join(t.root, 'adder.pid'),
      ],
      env: [{ name: 'FIXTURE_SUM_PREFIX', value: 'sum=' }],
    }
    const { sessionId } = await client.newSession(t.work, [adder])
    // MCP tools are outside the preset: the client is asked first.
    client.permissionAnswers.push('allow_once')
    expect((await client.prompt(sessionId, 'add 2 and 3')).stopReason).toBe('end_turn')
    expect(client.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(['call_add'])
    const tools = (request: number) =>
      t.mock.requests[request]?.body.tools.map((tool: { function: { name: string } }) => tool.function.name)
    expect(tools(0)).toContain('mcp__adder__add')
    const add = toolUpdates(client.updatesOf(sessionId), 'call_add')
    expect(add[0]).toMatchObject({ kind: 'other', title: 'add (adder)', rawInput: { a: 2, b: 3 } })
    expect(add.at(-1)).toMatchObject({
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text: 'sum=5' } }],
    })

    const other = await client.newSession()
    await client.prompt(other.sessionId, 'add again')
    expect(tools(2)).not.toContain('mcp__adder__add')

    await expect(
      client.newSession(t.work, [{ type: 'sse', name: 'old', url: 'http://127.0.0.1:1/sse', headers: [] }]),
    ).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('MCP server "old" uses SSE'),
    })

    // Closing the session that supplied the server stops it.
    const pid = Number(readFileSync(path.join(t.root, 'adder.pid'), 'utf8'))
    expect(() => process.kill(pid, 0)).not.toThrow()
    await client.agent.request('session/close', { sessionId })
    await vi.waitFor(() => expect(() => process.kill(pid, 0)).toThrow(), { timeout: 10_000 })
    expect((await client.close()).code).toBe(0)
  })

  it('takes images when the model does, and hands resources to the model as links and context', async () => {
    t.mock.enqueue(reply.text('A red pixel, and the notes.'))
    const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='
    const client = start({ env: { ...t.env(), DSH_MODEL: 'deepseek-v4-flash-vision-exp' } })
    const init = await client.initialize()
    expect(init.agentCapabilities?.promptCapabilities?.image).toBe(true)
    const { sessionId } = await client.newSession()
    const result = await client.agent.request('session/prompt', {
      sessionId,
      prompt: [
        { type: 'text', text: 'What is in' },
        { type: 'image', mimeType: 'image/png', data: pixel },
        { type: 'resource_link', name: 'main.ts', uri: `file://${t.work}/main.ts` },
        {
          type: 'resource',
          resource: { uri: `file://${t.work}/notes.md`, text: 'remember the milk', mimeType: 'text/markdown' },
        },
      ],
    })
    expect(result.stopReason).toBe('end_turn')
    const user = t.mock.requests[0]?.body.messages.find((m: { role: string }) => m.role === 'user')
    expect(user.content).toEqual([
      { type: 'text', text: 'What is in' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}` } },
      {
        type: 'text',
        text: `[main.ts](${t.work}/main.ts)\n<context source="${t.work}/notes.md">\nremember the milk\n</context>\n`,
      },
    ])
  })

  it('asks the client before a call outside the preset and follows its answer: allow once, allow for the session, reject', async () => {
    const outside = (name: string) => path.join(t.root, name)
    const write = (id: string, name: string) =>
      reply.toolCalls([{ id, name: 'write', arguments: { file_path: outside(name), content: `${name}\n` } }])
    t.mock.enqueue(
      write('call_1', 'one.txt'),
      reply.text('Wrote one.'),
      write('call_2', 'two.txt'),
      write('call_3', 'three.txt'),
      reply.text('Wrote two and three.'),
    )
    t.mock.enqueue(
      write('call_4', 'four.txt'),
      reply.text('Could not write four.'),
      write('call_5', 'five.txt'),
      reply.text('Could not write five.'),
    )
    // The temp dir is writable under workspace-write; move it away from the folder the writes go to.
    const temp = path.join(t.root, 'tmp')
    mkdirSync(temp)
    const client = start({ env: { ...t.env(), TMPDIR: temp } })
    await client.initialize()
    const { sessionId } = await client.newSession()

    client.permissionAnswers.push('allow_once')
    expect((await client.prompt(sessionId, 'write one')).stopReason).toBe('end_turn')
    expect(readFileSync(outside('one.txt'), 'utf8')).toBe('one.txt\n')
    const [asked] = client.permissionRequests
    expect(asked?.sessionId).toBe(sessionId)
    expect(asked?.options.map((o) => o.kind)).toEqual(['allow_once', 'allow_always', 'reject_once'])
    expect(asked?.toolCall).toMatchObject({
      toolCallId: 'call_1',
      kind: 'edit',
      title: `Write ${outside('one.txt')}`,
      locations: [{ path: outside('one.txt') }],
    })
    expect(JSON.stringify(asked?.toolCall.content)).toMatch(/outside|workspace/)

    // Allowed for the session: the second write outside the workspace is not asked about again.
    client.permissionAnswers.push('allow_always')
    expect((await client.prompt(sessionId, 'write two and three')).stopReason).toBe('end_turn')
    expect(client.permissionRequests).toHaveLength(2)
    expect(readFileSync(outside('two.txt'), 'utf8')).toBe('two.txt\n')
    expect(readFileSync(outside('three.txt'), 'utf8')).toBe('three.txt\n')

    // A new session starts without that allowance, and a rejection stops the call.
    const second = await client.newSession()
    client.permissionAnswers.push('reject_once')
    expect((await client.prompt(second.sessionId, 'write four')).stopReason).toBe('end_turn')
    expect(client.permissionRequests).toHaveLength(3)
    expect(existsSync(outside('four.txt'))).toBe(false)
    const final = toolUpdates(client.updatesOf(second.sessionId), 'call_4').at(-1)
    expect(final?.status).toBe('failed')
    expect(JSON.stringify(final?.content)).toContain('rejected')
    const tool = t.mock.requests.at(-1)?.body.messages.find((m: { role: string }) => m.role === 'tool')
    expect(tool.content).toMatch(/The user rejected this call/)

    // A request the client cancels counts as a rejection.
    client.permissionAnswers.push('cancelled')
    expect((await client.prompt(second.sessionId, 'write five')).stopReason).toBe('end_turn')
    expect(client.permissionRequests).toHaveLength(4)
    expect(existsSync(outside('five.txt'))).toBe(false)
    expect(toolUpdates(client.updatesOf(second.sessionId), 'call_5').at(-1)?.status).toBe('failed')
  })

  it('offers the permission presets as modes: read-only asks before a write, and the rejection keeps the file away', async () => {
    t.mock.enqueue(
      reply.toolCalls([{ id: 'call_w', name: 'write', arguments: { file_path: 'notes.txt', content: 'hi\n' } }]),
      reply.text('Not allowed.'),
    )
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession()
    await client.agent.request('session/set_mode', { sessionId, modeId: 'read-only' })
    client.permissionAnswers.push('reject_once')
    expect((await client.prompt(sessionId, 'write notes')).stopReason).toBe('end_turn')
    expect(client.permissionRequests).toHaveLength(1)
    expect(JSON.stringify(client.permissionRequests[0]?.toolCall.content)).toContain('read-only')
    expect(existsSync(path.join(t.work, 'notes.txt'))).toBe(false)
    await expect(client.agent.request('session/set_mode', { sessionId, modeId: 'yolo' })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining(
        'unknown mode "yolo"; the modes are read-only, workspace-write, danger-full-access, plan',
      ),
    })
  })
})

describe('dsh --profile acp: sessions over time', { timeout: 60_000 }, () => {
  it('session/cancel stops a streaming turn: the prompt resolves cancelled and the session goes on', async () => {
    t.mock.enqueue(
      reply.stall(3, reply.text('This answer will never finish streaming because the server stalls')),
      reply.text('Quick answer.'),
    )
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession()
    const pending = client.prompt(sessionId, 'talk slowly')
    await vi.waitFor(() => expect(chunkText(client.updatesOf(sessionId), 'agent_message_chunk')).not.toBe(''), {
      timeout: 20_000,
    })
    await client.agent.notify('session/cancel', { sessionId })
    expect((await pending).stopReason).toBe('cancelled')
    expect((await client.prompt(sessionId, 'again')).stopReason).toBe('end_turn')
    expect(chunkText(client.updatesOf(sessionId), 'agent_message_chunk')).toMatch(/Quick answer\.$/)
    expect((await client.close()).code).toBe(0)
    const turnEnds = (await storedLog(sessionId)).filter((e) => e.type === 'turn/end')
    expect(turnEnds.map((e) => e.data.reason)).toEqual(['aborted', 'completed'])
  })

  it('ends prompts with max_tokens and refusal, and a failed turn as an error naming the cause', async () => {
    t.mock.enqueue(
      reply.text('The sea rolls in and', { finishReason: 'length' }),
      reply.text('I cannot', { finishReason: 'content_filter' }),
      reply.error(401),
      reply.text('Back.'),
    )
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession()
    expect((await client.prompt(sessionId, 'a long poem')).stopReason).toBe('max_tokens')
    expect((await client.prompt(sessionId, 'something bad')).stopReason).toBe('refusal')
    await expect(client.prompt(sessionId, 'hello')).rejects.toMatchObject({
      code: -32603,
      message: expect.stringMatching(/^the turn failed: AUTH: /),
    })
    expect((await client.prompt(sessionId, 'hello again')).stopReason).toBe('end_turn')
  })

  it('a session/new answer survives a SIGKILL right after it: session/load finds the session', async () => {
    const first = start()
    await first.initialize()
    const { sessionId } = await first.newSession()
    expect((await first.process.kill('SIGKILL')).signal).toBe('SIGKILL')
    const second = start()
    await second.initialize()
    const loaded = await second.agent.request('session/load', { sessionId, cwd: t.work, mcpServers: [] })
    expect(loaded.modes?.currentModeId).toBe('workspace-write')
    expect((await second.close()).code).toBe(0)
  })

  it('session/load restores the mode the session was in', async () => {
    t.mock.enqueue(reply.text('Planning only.'))
    const first = start()
    await first.initialize()
    const { sessionId } = await first.newSession()
    await first.agent.request('session/set_mode', { sessionId, modeId: 'read-only' })
    await first.prompt(sessionId, 'look around')
    expect((await first.close()).code).toBe(0)
    expect((await storedLog(sessionId)).filter((e) => e.type === 'permission/preset').map((e) => e.data)).toEqual([
      { preset: 'read-only' },
    ])

    t.mock.enqueue(
      reply.toolCalls([{ id: 'call_w', name: 'write', arguments: { file_path: 'kept-out.txt', content: 'x' } }]),
      reply.text('Refused.'),
    )
    const second = start()
    await second.initialize()
    const loaded = await second.agent.request('session/load', { sessionId, cwd: t.work, mcpServers: [] })
    expect(loaded.modes?.currentModeId).toBe('read-only')
    second.permissionAnswers.push('reject_once')
    expect((await second.prompt(sessionId, 'write it')).stopReason).toBe('end_turn')
    expect(JSON.stringify(second.permissionRequests[0]?.toolCall.content)).toContain('read-only')
    expect(existsSync(path.join(t.work, 'kept-out.txt'))).toBe(false)
    expect((await second.close()).code).toBe(0)
  })

  it('session/load replays the history as updates, then the session continues with it', async () => {
    t.mock.enqueue(
      reply.toolCalls(
        [{ id: 'call_echo', name: 'bash', arguments: { description: 'Run a command', command: 'echo hello there' } }],
        {
          reasoning: 'Use echo.',
        },
      ),
      reply.text('It said hello there.'),
    )
    const first = start()
    await first.initialize()
    const { sessionId } = await first.newSession()
    await first.prompt(sessionId, 'say hello')
    expect((await first.close()).code).toBe(0)

    const second = start()
    const init = await second.initialize()
    expect(init.agentCapabilities?.loadSession).toBe(true)
    const loaded = await second.agent.request('session/load', { sessionId, cwd: t.work, mcpServers: [] })
    expect(loaded.modes?.currentModeId).toBe('workspace-write')
    const history = second.updatesOf(sessionId)
    expect(history.map((u) => u.sessionUpdate)).toEqual([
      'user_message_chunk',
      'agent_thought_chunk',
      'tool_call',
      'tool_call_update',
      'agent_message_chunk',
      'usage_update',
    ])
    expect(history.at(-1)).toMatchObject({ used: expect.any(Number), size: 1_000_000, cost: { currency: 'USD' } })
    expect(chunkText(history, 'user_message_chunk')).toBe('say hello')
    expect(chunkText(history, 'agent_thought_chunk')).toBe('Use echo.')
    expect(chunkText(history, 'agent_message_chunk')).toBe('It said hello there.')
    expect(history[2]).toMatchObject({ toolCallId: 'call_echo', kind: 'execute', title: '`echo hello there`' })
    expect(history[3]).toMatchObject({ toolCallId: 'call_echo', status: 'completed' })
    expect(JSON.stringify(history[3])).toContain('hello there')

    t.mock.enqueue(reply.text('Still here.'))
    expect((await second.prompt(sessionId, 'are you there?')).stopReason).toBe('end_turn')
    const contents = t.mock.requests.at(-1)?.body.messages.map((m: { content: unknown }) => m.content)
    expect(contents).toEqual(expect.arrayContaining(['say hello', 'It said hello there.', 'are you there?']))

    await expect(
      second.agent.request('session/load', { sessionId: 'session-does-not-exist', cwd: t.work, mcpServers: [] }),
    ).rejects.toMatchObject({
      code: -32002,
      message: 'unknown session: session-does-not-exist',
    })
  })

  it('session/load of a session another dsh holds is refused naming that process, and loads once it lets go', async () => {
    const first = start()
    await first.initialize()
    const { sessionId } = await first.newSession()
    const second = start()
    await second.initialize()
    const load = () => second.agent.request('session/load', { sessionId, cwd: t.work, mcpServers: [] })
    await expect(load()).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining(`process ${first.process.child.pid}`),
      data: { sessionId },
    })
    await first.agent.request('session/close', { sessionId })
    expect((await load()).modes?.currentModeId).toBe('workspace-write')
    expect((await first.close()).code).toBe(0)
    expect((await second.close()).code).toBe(0)
  })

  it('reads and writes files through the client when it offers fs methods: the unsaved buffer is edited, the disk is not', async () => {
    const file = path.join(t.work, 'todo.md')
    writeFileSync(file, '- saved on disk\n')
    t.mock.enqueue(
      reply.toolCalls([{ id: 'call_read', name: 'read', arguments: { file_path: 'todo.md' } }]),
      reply.toolCalls([
        {
          id: 'call_edit',
          name: 'edit',
          arguments: { file_path: 'todo.md', old_string: '- unsaved item', new_string: '- [x] unsaved item' },
        },
      ]),
      reply.toolCalls([{ id: 'call_write', name: 'write', arguments: { file_path: 'new.md', content: '# New\n' } }]),
      reply.text('Done.'),
    )
    const client = start({ fs: true })
    client.buffers.set(file, '- unsaved item\n')
    await client.initialize()
    const { sessionId } = await client.newSession()
    expect((await client.prompt(sessionId, 'tick the item')).stopReason).toBe('end_turn')

    const readResult = t.mock.requests[1]?.body.messages.find((m: { role: string }) => m.role === 'tool')
    expect(readResult.content).toContain('- unsaved item')
    expect(readResult.content).not.toContain('saved on disk')
    expect(client.reads).toContain(file)
    expect(client.writes).toEqual([
      { path: file, content: '- [x] unsaved item\n' },
      { path: path.join(t.work, 'new.md'), content: '# New\n' },
    ])
    expect(readFileSync(file, 'utf8')).toBe('- saved on disk\n')
    expect(existsSync(path.join(t.work, 'new.md'))).toBe(false)
    const updates = client.updatesOf(sessionId)
    expect(toolUpdates(updates, 'call_edit').map((u) => u.status)).toEqual(['pending', 'in_progress', 'completed'])
  })

  it('when the client goes away mid-turn, the turn is cancelled, the session saved, and dsh exits 0', async () => {
    t.mock.enqueue(reply.stall(2, reply.text('A reply that never ends because the server stalls')))
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession()
    void client.prompt(sessionId, 'keep talking').catch(() => {})
    await t.mock.waitForRequests(1)
    const result = await client.close()
    expect(result.code).toBe(0)
    const events = await storedLog(sessionId)
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
  })
})

/** dsh --profile acp spoken to line by line, for input no well-behaved client sends. */
class RawAcp {
  readonly process: DshProcess

  constructor(args: string[] = []) {
    this.process = startDsh([...args, '--profile', 'acp'], { home: t.home, cwd: t.work, env: t.env() })
    running.push(this)
  }

  send(line: string): void {
    this.process.child.stdin?.write(`${line}\n`)
  }

  request(id: number, method: string, params: unknown): void {
    this.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }))
  }

  /** Every message dsh wrote so far. */
  messages(): Array<Record<string, any>> {
    return this.process.stdout
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line))
  }

  /** The response to request `id` (null: the responses without an id, `nth` of them). */
  async response(id: number | null, nth = 0): Promise<Record<string, any>> {
    return vi.waitFor(
      () => {
        const found = this.messages().filter((m) => m.id === id && !('method' in m))[nth]
        if (!found) throw new Error(`no response to ${id} yet; stdout so far:\n${this.process.stdout.slice(-2000)}`)
        return found
      },
      { timeout: 20_000 },
    )
  }

  async close(): Promise<DshResult> {
    this.process.child.stdin?.end()
    return this.process.exited
  }
}

describe('dsh --profile acp: bad input', { timeout: 60_000 }, () => {
  it('answers garbage, unknown methods, bad params, unknown sessions and a huge prompt with errors, queues a second prompt, and stays up', async () => {
    const raw = new RawAcp()
    raw.request(1, 'session/new', { cwd: t.work, mcpServers: [] })
    expect((await raw.response(1)).error).toMatchObject({
      code: -32600,
      message: expect.stringContaining('must be initialized'),
    })
    raw.send('this is not json {')
    expect((await raw.response(null)).error).toMatchObject({ code: -32700 })
    raw.send('[]')
    expect((await raw.response(null, 1)).error).toMatchObject({ code: -32600 })
    raw.request(2, 'initialize', { protocolVersion: 1, clientCapabilities: {} })
    expect((await raw.response(2)).result).toMatchObject({ protocolVersion: 1 })

    raw.request(3, 'session/frobnicate', {})
    expect((await raw.response(3)).error).toMatchObject({ code: -32601 })
    raw.request(4, 'session/new', { cwd: 42, mcpServers: [] })
    expect((await raw.response(4)).error).toMatchObject({ code: -32602 })
    raw.request(5, 'session/new', { cwd: 'relative/folder', mcpServers: [] })
    expect((await raw.response(5)).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('cwd must be an absolute path'),
    })
    raw.request(6, 'session/new', { cwd: path.join(t.work, 'missing'), mcpServers: [] })
    expect((await raw.response(6)).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining(`cwd: ${path.join(t.work, 'missing')} is not a folder`),
      data: { field: 'cwd' },
    })
    raw.request(7, 'session/prompt', { sessionId: 'session-nope', prompt: [{ type: 'text', text: 'hi' }] })
    expect((await raw.response(7)).error).toMatchObject({
      code: -32002,
      message: expect.stringContaining('unknown session: session-nope'),
    })

    raw.request(8, 'session/new', { cwd: t.work, mcpServers: [] })
    const sessionId = (await raw.response(8)).result.sessionId as string
    raw.request(9, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'x'.repeat(3 * 1024 * 1024) }] })
    expect((await raw.response(9)).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('maxPromptBytes'),
    })
    raw.request(10, 'session/prompt', { sessionId, prompt: [{ type: 'audio', data: 'AAAA', mimeType: 'audio/wav' }] })
    expect((await raw.response(10)).error.message).toContain('audio prompts are not supported')
    raw.request(11, 'session/prompt', { sessionId, prompt: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }] })
    expect((await raw.response(11)).error.message).toContain('does not take images')

    t.mock.enqueue(reply.stall(2, reply.text('A slow reply that the server never finishes')))
    raw.request(12, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'slow' }] })
    await t.mock.waitForRequests(1)
    // A second prompt is queued behind the running one; the cancel drops it too.
    raw.request(13, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'again' }] })
    raw.send(JSON.stringify({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId } }))
    expect((await raw.response(12)).result).toEqual({ stopReason: 'cancelled' })
    expect((await raw.response(13)).result).toEqual({ stopReason: 'cancelled' })

    // Nothing above broke the server or the session.
    t.mock.enqueue(reply.text('Fine.'))
    raw.request(14, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'still ok?' }] })
    expect((await raw.response(14)).result).toEqual({ stopReason: 'end_turn' })
    const result = await raw.close()
    expect(result.code).toBe(0)
    expect((await storedLog(sessionId)).filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual([
      'aborted',
      'completed',
    ])
  })

  it('answers a prompt still running when stdin closes with cancelled before it exits', async () => {
    t.mock.enqueue(reply.stall(2, reply.text('A reply held by the model server until the client has gone')))
    const raw = new RawAcp()
    raw.request(1, 'initialize', { protocolVersion: 1 })
    await raw.response(1)
    raw.request(2, 'session/new', { cwd: t.work, mcpServers: [] })
    const sessionId = (await raw.response(2)).result.sessionId as string
    raw.request(3, 'session/prompt', { sessionId, prompt: [{ type: 'text', text: 'keep talking' }] })
    await t.mock.waitForRequests(1)
    const result = await raw.close()
    expect(result.code).toBe(0)
    // Everything dsh wrote is in stdout by the time it has exited: the answer was sent before the exit.
    expect(raw.messages().find((m) => m.id === 3)).toEqual({
      jsonrpc: '2.0',
      id: 3,
      result: { stopReason: 'cancelled' },
    })
    expect((await storedLog(sessionId)).at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
  })

  it('refuses session ids that cannot name a session with -32602 saying why', async () => {
    const raw = new RawAcp()
    raw.request(1, 'initialize', { protocolVersion: 1 })
    await raw.response(1)
    raw.request(2, 'session/load', { sessionId: '../../etc/passwd', cwd: t.work, mcpServers: [] })
    const load = (await raw.response(2)).error
    expect(load).toMatchObject({ code: -32602, data: { sessionId: '../../etc/passwd' } })
    expect(load.message).toContain('sessionId "../../etc/passwd" must be a session id')
    raw.request(3, 'session/prompt', { sessionId: '', prompt: [{ type: 'text', text: 'hi' }] })
    expect((await raw.response(3)).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('sessionId "" must be a session id'),
    })
    raw.request(4, 'session/set_mode', { sessionId: 'a/b', modeId: 'read-only' })
    expect((await raw.response(4)).error).toMatchObject({ code: -32602, data: { sessionId: 'a/b' } })
    // A well-formed id that names nothing is still unknown, not invalid.
    raw.request(5, 'session/load', { sessionId: 'session-nope', cwd: t.work, mcpServers: [] })
    expect((await raw.response(5)).error).toMatchObject({ code: -32002 })
    expect((await raw.close()).code).toBe(0)
  })

  it('skips a line longer than maxMessageBytes with an error for its request, and reads on', async () => {
    const patch = path.join(t.root, 'small-lines.yml')
    writeFileSync(patch, '- id: acp-server\n  config:\n    maxMessageBytes: 65536\n')
    const raw = new RawAcp(['--patch', patch])
    raw.request(1, 'initialize', { protocolVersion: 1 })
    await raw.response(1)
    raw.request(2, 'session/prompt', { sessionId: 'session-x', prompt: [{ type: 'text', text: 'y'.repeat(200_000) }] })
    expect((await raw.response(2)).error).toMatchObject({
      code: -32600,
      message: expect.stringContaining('more than the 65536 bytes'),
    })
    raw.request(3, 'authenticate', { methodId: 'none' })
    expect((await raw.response(3)).result).toEqual({})
    expect((await raw.close()).code).toBe(0)
  })
})
