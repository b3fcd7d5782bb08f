import { existsSync, readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { describe, expect, it, onTestFinished } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { type RpcMessage, SdkWire } from './support/sdk-wire.ts'
import { ONE_TOOL_TURN, readSessionLog, streamedText } from './support/session-log.ts'

const t = useMockedHeadless()

function sdk(args: string[] = [], profile = 'sdk'): SdkWire {
  return new SdkWire([...args, '--profile', profile], { home: t.home, cwd: t.work, env: t.env() })
}

async function started(wire = sdk(), capabilities: Record<string, boolean> = {}): Promise<SdkWire> {
  await wire.call('initialize', { protocolVersion: 1, clientInfo: { name: 'test' }, capabilities })
  return wire
}

async function newSession(wire: SdkWire, extra: Record<string, unknown> = {}): Promise<string> {
  return (await wire.call('session/new', { cwd: t.work, ...extra })).sessionId
}

const types = (events: RpcMessage[]) => events.map((e) => e.type)
/** USD for `usage` at deepseek-v4-flash's list price. */
const flashCost = (usage: RpcMessage) =>
  (usage.inputTokens * 0.14 + usage.cacheReadTokens * 0.0028 + usage.outputTokens * 0.28) / 1e6
const textOf = (messages: RpcMessage[]) =>
  messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))

describe('dsh --profile sdk', () => {
  it('initializes, runs a prompt with a tool and streams events, deltas and status', async () => {
    t.mock.enqueue(
      reply.toolCalls(
        [{ name: 'bash', arguments: { description: 'Run a command', command: 'echo streamed-from-bash' } }],
        { reasoning: 'Run it.' },
      ),
      reply.text('The command printed streamed-from-bash.'),
    )
    const wire = sdk()
    const init = await wire.call('initialize', { protocolVersion: 1 })
    expect(init).toMatchObject({
      protocolVersion: 1,
      serverInfo: { name: 'dsh' },
      defaultModel: 'deepseek-v4-flash',
      capabilities: { approvals: false, questions: false },
    })
    expect(init.models).toContainEqual(expect.objectContaining({ provider: 'deepseek', id: 'deepseek-v4-flash' }))
    const sessionId = await newSession(wire)
    expect(sessionId).toMatch(/^session-/)

    const result = await wire.call('session/prompt', { sessionId, content: 'What does echo print?' })
    expect(result).toMatchObject({ stopReason: 'completed', text: 'The command printed streamed-from-bash.', turn: 1 })
    expect(result.usage.inputTokens).toBeGreaterThan(0)
    expect(result.usage.outputTokens).toBeGreaterThan(0)
    expect(init.models).toContainEqual(
      expect.objectContaining({ id: 'deepseek-v4-flash', price: { input: 0.14, cacheRead: 0.0028, output: 0.28 } }),
    )
    expect(result).toMatchObject({ steps: 2, durationMs: expect.any(Number), costUsd: expect.any(Number) })
    expect(result.costUsd).toBeCloseTo(flashCost(result.usage), 12)
    const promptSize = result.usage.inputTokens + result.usage.cacheReadTokens
    expect(result.context.window).toBe(1_000_000)
    expect(result.context.tokens).toBeGreaterThan(0)
    expect(result.context.tokens).toBeLessThanOrEqual(promptSize + result.usage.outputTokens)

    const events = wire.notifications('session/event', sessionId).map((p) => p.event)
    expect(types(events)).toEqual(ONE_TOOL_TURN)
    expect(JSON.stringify(events.find((e) => e.type === 'tool/result'))).toContain('streamed-from-bash')
    const deltas = wire.notifications('session/delta', sessionId)
    expect(streamedText(deltas, 'text')).toBe('The command printed streamed-from-bash.')
    expect(streamedText(deltas, 'reasoning')).toBe('Run it.')
    expect(deltas.some((d) => d.kind === 'tool-arguments')).toBe(true)
    expect(wire.notifications('session/status', sessionId).map((s) => s.status)).toEqual(['running', 'idle'])
    // The answer comes after every notification of its turn.
    const answerAt = wire.received.findIndex((m) => m.result?.stopReason === 'completed')
    const lastEventAt = wire.received.findLastIndex((m) => m.method === 'session/event')
    expect(answerAt).toBeGreaterThan(lastEventAt)

    // The durable log, whole and after a seq.
    const all = (await wire.call('session/events', { sessionId })).events
    expect(all.map((e: RpcMessage) => e.seq)).toEqual(events.map((e) => e.seq))
    const tail = (await wire.call('session/events', { sessionId, afterSeq: 10 })).events
    expect(tail.map((e: RpcMessage) => e.seq)).toEqual([11, 12, 13, 14])

    const exit = await wire.shutdown()
    expect(exit.code).toBe(0)
    expect(
      exit.stdout
        .trim()
        .split('\n')
        .every((line) => JSON.parse(line)),
    ).toBeTruthy()
    const log = await readSessionLog(t.home, sessionId)
    expect(log.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
  })

  it('cancels a running prompt and the prompt queued behind it, and takes the next one after', async () => {
    t.mock.enqueue(
      reply.stall(2, reply.text('This reply never finishes because the model stalls here.')),
      reply.text('Second answer.'),
    )
    const wire = await started()
    const sessionId = await newSession(wire)
    const running = wire.request('session/prompt', { sessionId, content: 'Say something long.' })
    await wire.waitFor((m) => m.method === 'session/delta', 'a delta')

    const queued = wire.request('session/prompt', { sessionId, content: 'Another one.' })
    await wire.waitFor((m) => m.method === 'session/queued', 'the queued notification')

    expect((await wire.request('session/cancel', { sessionId })).result).toEqual({})
    const cancelled = await running
    expect(cancelled.result).toMatchObject({ stopReason: 'cancelled', turn: 1 })
    // The cancel dropped the queued prompt: it never became a turn.
    expect((await queued).result).toEqual({ stopReason: 'cancelled', text: '', steps: 0, usage: expect.any(Object) })
    const next = await wire.call('session/prompt', { sessionId, content: 'Again.' })
    expect(next).toMatchObject({ stopReason: 'completed', text: 'Second answer.', turn: 2 })
    expect((await wire.shutdown()).code).toBe(0)
    const log = await readSessionLog(t.home, sessionId)
    expect(log.events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual(['aborted', 'completed'])
  })

  it('resumes a stored session in a new process, with its history', async () => {
    t.mock.enqueue(reply.text('I will remember the number 42.'), reply.text('The number was 42.'))
    const first = await started()
    const sessionId = await newSession(first)
    await first.call('session/prompt', { sessionId, content: 'Remember 42.' })
    expect((await first.shutdown()).code).toBe(0)

    const second = await started()
    const unknown = await second.request('session/prompt', { sessionId, content: 'not open yet' })
    expect(unknown.error).toMatchObject({ code: -32001 })
    expect(unknown.error.message).toContain('session/resume')
    expect(await second.call('session/resume', { sessionId })).toEqual({ sessionId })
    const answer = await second.call('session/prompt', { sessionId, content: 'What was the number?' })
    expect(answer).toMatchObject({ stopReason: 'completed', text: 'The number was 42.', turn: 2 })
    // session/usage covers the whole session, the turn of the first process included.
    const usage = await second.call('session/usage', { sessionId })
    expect(usage.turns.map((turn: { turn: number; steps: number }) => [turn.turn, turn.steps])).toEqual([
      [1, 1],
      [2, 1],
    ])
    expect(usage.turns[1].costUsd).toBeCloseTo(answer.costUsd, 12)
    expect(usage.costUsd).toBeCloseTo(flashCost(usage.usage), 12)
    expect(usage.context).toEqual(answer.context)
    const missing = await second.request('session/usage', { sessionId: 'session-nope' })
    expect(missing.error).toMatchObject({ code: -32001 })
    const history = t.mock.requests[1]?.body.messages.map((m: RpcMessage) => m.role)
    expect(history).toEqual(['system', 'user', 'assistant', 'user'])
    expect(
      (await second.call('session/events', { sessionId })).events.filter((e: RpcMessage) => e.type === 'turn/end'),
    ).toHaveLength(2)
    expect((await second.shutdown()).code).toBe(0)
  })

  it('answers SessionBusy to a resume of a session another dsh process has open', async () => {
    t.mock.enqueue(reply.text('Noted.'))
    const holder = await started()
    const sessionId = await newSession(holder)
    await holder.call('session/prompt', { sessionId, content: 'Remember 42.' })
    const other = await started()
    const busy = await other.request('session/resume', { sessionId })
    expect(busy.error).toMatchObject({ code: -32002, data: { sessionId } })
    expect(busy.error.message).toContain(
      `session ${sessionId} is open in another dsh (process ${holder.proc.child.pid} on `,
    )
    expect((await holder.shutdown()).code).toBe(0)
    expect(await other.call('session/resume', { sessionId })).toEqual({ sessionId })
    expect((await other.shutdown()).code).toBe(0)
  })

  it('forks a session at a finished turn into a new session that continues from there', async () => {
    t.mock.enqueue(reply.text('First.'), reply.text('Second.'), reply.text('Forked answer.'))
    const wire = await started()
    const sessionId = await newSession(wire)
    await wire.call('session/prompt', { sessionId, content: 'one' })
    await wire.call('session/prompt', { sessionId, content: 'two' })

    const bad = await wire.request('session/fork', { sessionId, turn: 7 })
    expect(bad.error).toMatchObject({ code: -32602, data: { field: 'turn' } })
    const { sessionId: fork } = await wire.call('session/fork', { sessionId, turn: 1 })
    expect(fork).not.toBe(sessionId)
    const forkEvents = (await wire.call('session/events', { sessionId: fork })).events
    expect(forkEvents.filter((e: RpcMessage) => e.type === 'turn/end')).toHaveLength(1)
    expect(forkEvents.at(-1).type).toBe('session/end-seed')

    const answer = await wire.call('session/prompt', { sessionId: fork, content: 'three' })
    expect(answer).toMatchObject({ text: 'Forked answer.', turn: 2 })
    // The fork's request carries turn 1 and the new prompt, not turn 2.
    const userTexts = t.mock.requests[2]?.body.messages.filter((m: RpcMessage) => m.role === 'user')
    expect(textOf(userTexts)).toEqual(['one', 'three'])
    const { sessions } = await wire.call('session/list', {})
    expect(sessions.map((s: RpcMessage) => s.sessionId).sort()).toEqual([sessionId, fork].sort())
    // The catalog may not carry forkedFrom; the stored header does (below).
    expect([undefined, sessionId]).toContain(sessions.find((s: RpcMessage) => s.sessionId === fork)?.forkedFrom)
    expect((await wire.shutdown()).code).toBe(0)
    expect((await readSessionLog(t.home, fork)).header).toMatchObject({ forkedFrom: sessionId })
  })

  // sdk lists through the SQLite catalog (full-text query); sdk-minimal has none and reads the stored headers.
  for (const [profile, queryOf] of [
    ['sdk', () => 'elsewhere'],
    ['sdk-minimal', (id: string) => id.slice(-12)],
  ] as const) {
    it(`lists stored sessions newest first, by folder and text, a page at a time (${profile})`, async () => {
      t.mock.setFallback(reply.text('ok'))
      const wire = await started(sdk([], profile))
      const ids: string[] = []
      for (let i = 0; i < 3; i++) {
        const id = await newSession(wire)
        await wire.call('session/prompt', { sessionId: id, content: `prompt ${i}` })
        ids.push(id)
      }
      const other = await newSession(wire, { cwd: t.home })
      await wire.call('session/prompt', { sessionId: other, content: 'elsewhere' })
      t.mock.setFallback(undefined)

      const all = await wire.call('session/list', {})
      expect(all.sessions.map((s: RpcMessage) => s.sessionId).sort()).toEqual([...ids, other].sort())
      const times = all.sessions.map((s: RpcMessage) => s.updatedAt)
      expect(times).toEqual([...times].sort((a, b) => b - a))
      expect(all.sessions[0]).toEqual(
        expect.objectContaining({ cwd: expect.any(String), createdAt: expect.any(Number) }),
      )

      const here = await wire.call('session/list', { cwd: t.work })
      expect(here.sessions.map((s: RpcMessage) => s.sessionId).sort()).toEqual([...ids].sort())
      const found = await wire.call('session/list', { query: queryOf(other) })
      expect(found.sessions.map((s: RpcMessage) => s.sessionId)).toEqual([other])

      const page1 = await wire.call('session/list', { cwd: t.work, limit: 2 })
      expect(page1.sessions).toHaveLength(2)
      const page2 = await wire.call('session/list', { cwd: t.work, limit: 2, cursor: page1.nextCursor })
      expect(page2.sessions).toHaveLength(1)
      expect(page2.nextCursor).toBeUndefined()
      expect([...page1.sessions, ...page2.sessions].map((s: RpcMessage) => s.sessionId).sort()).toEqual([...ids].sort())
      expect((await wire.request('session/list', { limit: 100_000 })).error).toMatchObject({
        code: -32602,
        data: { field: 'limit' },
      })
      if (profile === 'sdk-minimal') {
        expect((await wire.request('session/list', { cursor: 'bogus' })).error).toMatchObject({
          code: -32602,
          data: { field: 'cursor' },
        })
      }
      expect((await wire.shutdown()).code).toBe(0)
    })
  }

  it('runs /compact through the compaction plugin instead of the model loop', async () => {
    t.mock.enqueue(
      reply.text(`A long first answer. ${'Lots of detail here. '.repeat(200)}`),
      reply.text('Second answer.'),
      reply.text('Summary: one long answer.'),
    )
    const wire = await started()
    const sessionId = await newSession(wire)
    await wire.call('session/prompt', { sessionId, content: 'one' })
    await wire.call('session/prompt', { sessionId, content: 'two' })
    const compact = await wire.call('session/prompt', { sessionId, content: '/compact' })
    expect(compact, JSON.stringify(compact)).toMatchObject({ stopReason: 'completed' })
    expect(compact.text).toMatch(/^Compacted the conversation/)
    expect(t.mock.requests).toHaveLength(3)
    const events = (await wire.call('session/events', { sessionId })).events
    expect(
      events.filter((e: RpcMessage) => e.type === 'context/compaction').map((e: RpcMessage) => e.data.reason),
    ).toEqual(['manual'])
    expect(events.filter((e: RpcMessage) => e.type === 'turn/start')).toHaveLength(2)
    expect((await wire.shutdown()).code).toBe(0)
  })

  describe('approvals', () => {
    const writeCall = (name: string) =>
      reply.toolCalls([{ name: 'write', arguments: { file_path: name, content: 'approved content\n' } }])

    it('asks the client, which allows once (file written) or rejects with a message (not written)', async () => {
      t.mock.enqueue(
        writeCall('allowed.txt'),
        reply.text('Wrote it.'),
        writeCall('rejected.txt'),
        reply.text('Could not write.'),
      )
      const wire = await started(sdk(), { approvals: true })
      expect(wire.received[0]?.result.capabilities).toEqual({ approvals: true, questions: false })
      const sessionId = await newSession(wire, { permissionPreset: 'read-only' })
      const answers: unknown[] = [{ decision: 'allow-once' }, { decision: 'reject', message: 'not this file' }]
      wire.answer = () => answers.shift()

      expect(await wire.call('session/prompt', { sessionId, content: 'write allowed.txt' })).toMatchObject({
        stopReason: 'completed',
      })
      expect(readFileSync(path.join(t.work, 'allowed.txt'), 'utf8')).toBe('approved content\n')
      await wire.call('session/prompt', { sessionId, content: 'write rejected.txt' })
      expect(existsSync(path.join(t.work, 'rejected.txt'))).toBe(false)

      const asked = wire.received.filter((m) => m.method === 'approval/request')
      expect(asked).toHaveLength(2)
      expect(asked[0]?.params).toMatchObject({
        sessionId,
        preset: 'read-only',
        toolCall: { name: 'write', arguments: expect.stringContaining('allowed.txt') },
      })
      expect(asked[0]?.params.reason).toContain('allowed.txt')
      const results = (await wire.call('session/events', { sessionId })).events.filter(
        (e: RpcMessage) => e.type === 'tool/result',
      )
      expect(results[1].data.error.code).toBe('DENIED')
      expect(JSON.stringify(results[1].data.message)).toContain('not this file')
      expect((await wire.shutdown()).code).toBe(0)
    })

    it('without the approvals capability denies calls outside the preset, as headless does', async () => {
      t.mock.enqueue(writeCall('denied.txt'), reply.text('Denied.'))
      const wire = await started()
      const sessionId = await newSession(wire, { permissionPreset: 'read-only' })
      await wire.call('session/prompt', { sessionId, content: 'write denied.txt' })
      expect(existsSync(path.join(t.work, 'denied.txt'))).toBe(false)
      expect(wire.received.some((m) => m.method === 'approval/request')).toBe(false)
      expect((await wire.shutdown()).code).toBe(0)
    })
  })

  it('sends the model’s questions to a client that declared questions, and the model reads the answers', async () => {
    const question = { id: 'colour', question: 'Which colour?', options: [{ label: 'red' }, { label: 'blue' }] }
    t.mock.enqueue(
      reply.toolCalls([{ name: 'ask_user_question', arguments: { questions: [question] } }]),
      reply.text('Blue it is.'),
    )
    const wire = await started(sdk(), { questions: true })
    expect(wire.received[0]?.result.capabilities.questions).toBe(true)
    const sessionId = await newSession(wire)
    wire.answer = (request) =>
      request.method === 'question/ask' ? { answers: [{ question: 'Which colour?', selected: ['blue'] }] } : undefined
    expect(await wire.call('session/prompt', { sessionId, content: 'Ask me.' })).toMatchObject({ text: 'Blue it is.' })
    const asked = wire.received.find((m) => m.method === 'question/ask')
    expect(asked?.params).toMatchObject({ sessionId, questions: [question] })
    const toolMessage = t.mock.requests[1]?.body.messages.find((m: RpcMessage) => m.role === 'tool')
    expect(toolMessage.content).toContain('blue')
    expect((await wire.shutdown()).code).toBe(0)
  })

  describe('bad input', () => {
    it('answers each mistake with its JSON-RPC error and keeps serving', async () => {
      const wire = sdk()
      const notYet = await wire.request('session/new', { cwd: t.work })
      expect(notYet.error).toMatchObject({ code: -32003 })

      wire.sendRaw('this is not json')
      const parse = await wire.waitFor((m) => m.error?.code === -32700, 'the parse error')
      expect(parse.id).toBeNull()
      wire.sendRaw('[1, 2]')
      wire.sendRaw('{"jsonrpc":"2.0","id":"m1","method":42}')
      wire.sendRaw('{"id":"m2","method":"initialize"}')
      wire.sendRaw('{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}')
      const invalidRequests = () => wire.received.filter((m) => m.error?.code === -32600)
      await wire.waitFor(() => invalidRequests().length === 4, 'four -32600 answers')
      const invalid = invalidRequests()
      expect(invalid.map((m) => m.id)).toEqual([null, 'm1', 'm2', null])

      await started(wire)
      expect((await wire.request('initialize', { protocolVersion: 1 })).error).toMatchObject({ code: -32004 })
      expect((await wire.request('session/teleport', {})).error).toMatchObject({
        code: -32601,
        message: 'unknown method: session/teleport',
      })

      const relative = await wire.request('session/new', { cwd: 'relative/dir' })
      expect(relative.error).toMatchObject({ code: -32602, data: { field: 'cwd' } })
      expect(relative.error.message).toContain('cwd')
      const missing = await wire.request('session/new', { cwd: path.join(t.work, 'missing') })
      expect(missing.error).toMatchObject({ code: -32602, data: { field: 'cwd' } })
      const model = await wire.request('session/new', { cwd: t.work, model: 'gpt-17' })
      expect(model.error).toMatchObject({ code: -32602, data: { field: 'model' } })
      expect((await wire.request('session/new', [t.work])).error).toMatchObject({ code: -32602 })

      const sessionId = await newSession(wire)
      const wrongType = await wire.request('session/prompt', { sessionId, content: 42 })
      expect(wrongType.error).toMatchObject({ code: -32602, data: { field: 'content' } })
      const empty = await wire.request('session/prompt', { sessionId, content: '   ' })
      expect(empty.error).toMatchObject({ code: -32602, data: { field: 'content' } })
      const badImage = await wire.request('session/prompt', {
        sessionId,
        content: [{ type: 'image', mediaType: 'image/png', data: '%%%' }],
      })
      expect(badImage.error).toMatchObject({ code: -32602, data: { field: 'content.0.data' } })
      const noSession = await wire.request('session/prompt', { sessionId: 'session-nope', content: 'hi' })
      expect(noSession.error).toMatchObject({ code: -32001, data: { sessionId: 'session-nope' } })
      expect((await wire.request('session/resume', { sessionId: 'session-nope' })).error).toMatchObject({
        code: -32001,
      })
      expect((await wire.request('session/events', { sessionId: 'session-nope' })).error).toMatchObject({
        code: -32001,
      })
      expect((await wire.request('session/resume', { sessionId: '../../etc/passwd' })).error).toMatchObject({
        code: -32602,
        data: { field: 'sessionId' },
      })

      // Still serving after all of that.
      expect(await wire.call('session/list', {})).toEqual({ sessions: [] })
      expect(t.mock.requests).toHaveLength(0)
      expect((await wire.shutdown()).code).toBe(0)
    })

    it('answers an over-long or malformed line with the id its first bytes show, else null, and keeps serving', async () => {
      await writeFile(path.join(t.work, 'short-lines.yml'), '- id: sdk-server\n  config:\n    maxLineBytes: 2048\n')
      const wire = await started(sdk(['--patch', 'short-lines.yml']))
      const sessionId = await newSession(wire)
      const tooLong = (m: RpcMessage) =>
        m.error?.code === -32600 && String(m.error.message).includes('longer than the limit')

      wire.sendRaw(
        `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"${sessionId}","content":"${'x'.repeat(5000)}"}}`,
      )
      const withId = await wire.waitFor(tooLong, 'the answer to the over-long line with id 7')
      expect(withId.id).toBe(7)
      const seen = wire.received.length
      wire.sendRaw(`{"jsonrpc":"2.0","method":"session/prompt","params":{"id":8,"content":"${'y'.repeat(5000)}"}}`)
      expect((await wire.waitFor(tooLong, 'the answer to the over-long line without id', seen)).id).toBeNull()

      wire.sendRaw('{"jsonrpc":"2.0","id":"m9","method":"session/list","params":{cwd: nope}}')
      expect((await wire.waitFor((m) => m.id === 'm9', 'the parse error of m9')).error).toMatchObject({ code: -32700 })
      const before = wire.received.length
      wire.sendRaw('{"jsonrpc":"2.0","method":"session/list","params":{"id":10,oops}}')
      expect((await wire.waitFor((m) => m.error?.code === -32700, 'the parse error without id', before)).id).toBeNull()

      expect(await wire.call('session/list', {})).toMatchObject({ sessions: expect.any(Array) })
      expect(t.mock.requests).toHaveLength(0)
      expect((await wire.shutdown()).code).toBe(0)
    })

    it('refuses a prompt over the configured size, naming content, and takes one under it', async () => {
      await writeFile(path.join(t.work, 'small-prompts.yml'), '- id: sdk-server\n  config:\n    maxPromptBytes: 2000\n')
      t.mock.enqueue(reply.text('fits'))
      const wire = await started(sdk(['--patch', 'small-prompts.yml']))
      const sessionId = await newSession(wire)
      const big = await wire.request('session/prompt', { sessionId, content: 'x'.repeat(2001) })
      expect(big.error).toMatchObject({ code: -32602, data: { field: 'content' } })
      expect(big.error.message).toContain('maxPromptBytes')
      expect(await wire.call('session/prompt', { sessionId, content: 'y'.repeat(1900) })).toMatchObject({
        text: 'fits',
      })
      expect((await wire.shutdown()).code).toBe(0)
    })

    it('cancels and saves the running turn and exits 0 when stdin closes mid-turn', async () => {
      t.mock.enqueue(reply.stall(2, reply.text('A reply the client never sees the end of.')))
      const wire = await started()
      const sessionId = await newSession(wire)
      const pending = wire.request('session/prompt', { sessionId, content: 'Talk for a long time.' })
      await wire.waitFor((m) => m.method === 'session/delta', 'a delta')
      wire.closeInput()
      const exit = await wire.exited
      expect(exit.code).toBe(0)
      expect((await pending).result).toMatchObject({ stopReason: 'cancelled' })
      const log = await readSessionLog(t.home, sessionId)
      expect(log.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted', cause: 'shutdown' } })
      expect(log.events.some((e) => e.type === 'assistant/message' && e.data.interrupted)).toBe(true)
    })
  })
})

describe('dsh --profile sdk after a crash', () => {
  it('a session/new id and a prompt whose first event went out survive a SIGKILL', async () => {
    // The first process may die before or after its request reaches the model: answer by what is asked.
    t.mock.setFallback((request) =>
      textOf(request.body.messages).at(-1)?.includes('which word?')
        ? reply.text('Back again.')
        : reply.stall(1, reply.text('This reply never finishes.')),
    )
    onTestFinished(() => t.mock.setFallback())
    const first = await started()
    const empty = await newSession(first)
    const sessionId = await newSession(first)
    const running = first.request('session/prompt', { sessionId, content: 'remember the word quartz' })
    await first.waitFor(
      (m) => m.method === 'session/event' && m.params?.sessionId === sessionId,
      'the first event of the turn',
    )
    void running.catch(() => {})
    await first.proc.kill('SIGKILL')

    const second = await started()
    // Announced with no message yet: resumable, and empty.
    expect(await second.call('session/resume', { sessionId: empty })).toEqual({ sessionId: empty })
    expect(
      (await second.call('session/events', { sessionId: empty })).events.filter(
        (e: RpcMessage) => e.type === 'user/message',
      ),
    ).toEqual([])
    // Its turn was being shown: the message was stored first.
    const resumed = await second.call('session/resume', { sessionId })
    expect(resumed.problems.join('\n')).toMatch(/stopped mid-turn/)
    const result = await second.call('session/prompt', { sessionId, content: 'which word?' })
    expect(result).toMatchObject({ stopReason: 'completed', text: 'Back again.' })
    expect(textOf(t.mock.requests.at(-1)?.body.messages).join('\n')).toContain('remember the word quartz')
    expect((await second.shutdown()).code).toBe(0)
  })
})

describe('dsh --profile sdk-minimal', () => {
  it('boots on its own and runs a prompt that uses bash', async () => {
    t.mock.enqueue(
      reply.toolCalls([
        {
          name: 'bash',
          arguments: { description: 'Run a command', command: 'echo minimal-ok > out.txt && cat out.txt' },
        },
      ]),
      reply.text('Done.'),
    )
    const wire = await started(sdk([], 'sdk-minimal'))
    const sessionId = await newSession(wire)
    expect(await wire.call('session/prompt', { sessionId, content: 'Write out.txt with bash.' })).toMatchObject({
      stopReason: 'completed',
      text: 'Done.',
    })
    expect(readFileSync(path.join(t.work, 'out.txt'), 'utf8')).toBe('minimal-ok\n')
    const tools = t.mock.requests[0]?.body.tools.map((tool: RpcMessage) => tool.function.name)
    expect(tools).toEqual(['bash', 'edit', 'read', 'write'])
    // No compaction plugin in this tree: /compact says so instead of reaching the model.
    const compact = await wire.call('session/prompt', { sessionId, content: '/compact' })
    expect(compact).toMatchObject({ stopReason: 'error', error: { code: 'COMPACTION_UNAVAILABLE' } })
    expect(t.mock.requests).toHaveLength(2)
    expect((await wire.shutdown()).code).toBe(0)
    expect((await readSessionLog(t.home, sessionId)).events.at(-1)).toMatchObject({
      type: 'turn/end',
      data: { reason: 'completed' },
    })
  })
})
