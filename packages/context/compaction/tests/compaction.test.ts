import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Agent } from '@dsh/agent'
import type { Fiber } from '@dsh/cordis'
import type { SessionEvent } from '@dsh/session'
import { describe, expect, it } from 'vitest'
// The spine, the mock model server and the file tools, as the agent loop's own tests mount them.
import {
  type Harness,
  harnessPerTest,
  lastTurnEnd,
  ofType,
  wireMessages,
} from '../../../core/agent-loop/tests/harness.ts'
import { type MockScript, type RecordedRequest, reply } from '../../../test-support/llm-mock/src/index.ts'
import * as compaction from '../src/index.ts'
import type { CompactionConfig } from '../src/index.ts'

const WINDOW = 10_000

/** A harness per test; afterwards it is disposed and must have logged no warning. */
const startHarness = harnessPerTest()

interface Setup {
  h: Harness
  fiber: Fiber
  agent: Agent
}

async function setup(config: Partial<CompactionConfig> = {}, options: { persistence?: boolean } = {}): Promise<Setup> {
  const h = await startHarness(options)
  const fiber = h.root.plugin(compaction, { contextWindow: WINDOW, ...config } as CompactionConfig)
  await fiber
  for (const name of ['a', 'b', 'c', 'd']) {
    const lines = Array.from(
      { length: 30 },
      (_, i) => `${name}-line ${i}: ${name === 'a' ? 'alpha' : 'other'} content of file ${name}`,
    )
    await writeFile(join(h.workspace, `${name}.txt`), `${lines.join('\n')}\n`)
  }
  // A model the route does not list, so the window comes from the compaction config.
  const agent = await h.root.agents.create({ cwd: h.workspace, options: { model: 'mock-small' } })
  return { h, fiber, agent }
}

const high = { usage: { promptCacheMissTokens: 9000, completionTokens: 20 } }
const read = (path: string, options = {}) =>
  reply.toolCalls([{ name: 'read', arguments: { file_path: path } }], options)
const isSummaryCall = (request: RecordedRequest) =>
  !request.body.tools && JSON.stringify(request.body.messages).includes('<conversation>')
const content = (request: RecordedRequest | undefined) => JSON.stringify(wireMessages(request))

/** Every tool message answers a call of the assistant message right before the run of tool messages it is in. */
function expectWellFormed(request: RecordedRequest | undefined): void {
  const messages = wireMessages(request)
  let open: string[] = []
  for (const message of messages) {
    if (message.role === 'tool') {
      expect(open).toContain(message.tool_call_id)
      open = open.filter((id) => id !== message.tool_call_id)
      continue
    }
    expect(open).toEqual([])
    open = message.role === 'assistant' ? (message.tool_calls ?? []).map((c: { id: string }) => c.id) : []
  }
  expect(open).toEqual([])
}

/** Three reads whose last result pushes the context past the compaction threshold. */
const readsToPressure = () => [read('a.txt'), read('b.txt'), read('c.txt', high)]

/** Runs turn `turn` of `task` on `replies` and checks that it ended with the context overflow. */
async function overflowingTurn({ h, agent }: Setup, turn: number, task: string, ...replies: MockScript[]) {
  h.mock.enqueue(...replies)
  agent.followup(task)
  await agent.whenIdle()
  expect(lastTurnEnd(agent).data).toMatchObject({ turn, reason: 'error', error: { code: 'CONTEXT_WINDOW_EXCEEDED' } })
}

function compactions(agent: Agent): SessionEvent<'context/compaction'>[] {
  return ofType(agent, 'context/compaction')
}

describe('automatic compaction on context pressure', () => {
  it('summarises the older steps of a long turn and the next request carries the summary instead', async () => {
    const { h, agent } = await setup()
    h.mock.enqueue(...readsToPressure(), reply.text('- read a.txt: alpha content'), reply.text('All three read.'))
    agent.followup('read the three files')
    await agent.whenIdle()

    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
    const requests = h.mock.requests
    expect(requests).toHaveLength(5)
    const summaryCall = requests[3] as RecordedRequest
    expect(isSummaryCall(summaryCall)).toBe(true)
    expect(summaryCall.body.thinking).toEqual({ type: 'disabled' })
    expect(summaryCall.body.max_tokens).toBe(8192)
    expect(content(summaryCall)).toContain('a-line 0: alpha content of file a')
    expect(content(summaryCall)).not.toContain('b-line 0')

    const [event] = compactions(agent)
    const replies = ofType(agent, 'assistant/message')
    const results = ofType(agent, 'tool/result')
    expect(event?.data).toMatchObject({ reason: 'threshold', replaced: [replies[0]?.seq, results[0]?.seq] })
    expect(event?.data.tokensBefore).toBeGreaterThanOrEqual(9000)
    const summary = ofType(agent, 'user/message').find((e) => e.data.message.source.kind === 'plugin')
    expect(summary?.replaces).toEqual([replies[0]?.seq, results[0]?.seq])
    expect(summary?.data.message.source).toEqual({ kind: 'plugin', plugin: 'compaction', form: 'summary' })

    const after = requests[4]
    expect(content(after)).toContain('<compacted-summary>\\n- read a.txt: alpha content\\n</compacted-summary>')
    expect(content(after)).not.toContain('alpha content of file a')
    expect(content(after)).toContain('b-line 0')
    expect(content(after)).toContain('c-line 0')
    const roles = wireMessages(after).map((m) => m.role)
    expect(roles).toEqual(['system', 'user', 'user', 'assistant', 'tool', 'assistant', 'tool'])
    expect(wireMessages(after)[1].content).toBe('read the three files')
    expectWellFormed(after)
    // The log keeps what the history no longer shows.
    expect(results[0]?.data.message.content[0]).toMatchObject({ type: 'tool-result' })
  })

  it('prunes a large old tool result and skips the summary when that is enough', async () => {
    const { h, agent } = await setup()
    await writeFile(
      join(h.workspace, 'big.txt'),
      `${Array.from({ length: 200 }, (_, i) => `big line ${i} ${'x'.repeat(40)}`).join('\n')}\n`,
    )
    const justOver = { usage: { promptCacheMissTokens: 8200, completionTokens: 10 } }
    h.mock.enqueue(read('big.txt'), read('b.txt'), read('c.txt', justOver), reply.text('Done.'))
    agent.followup('look at the big file')
    await agent.whenIdle()

    expect(lastTurnEnd(agent).data.reason).toBe('completed')
    expect(h.mock.requests.some(isSummaryCall)).toBe(false)
    const [original, , , stub] = ofType(agent, 'tool/result')
    expect(stub?.replaces).toEqual([original?.seq])
    expect(compactions(agent).map((e) => e.data)).toEqual([
      { reason: 'threshold', replaced: [original?.seq], tokensBefore: expect.any(Number) },
    ])
    const last = wireMessages(h.mock.requests[3])
    expect(last[3]).toMatchObject({ role: 'tool', tool_call_id: stub?.data.callId })
    expect(last[3].content).toMatch(
      /^\[The output of read \(\d+ characters\) was removed from the context to save space; run the tool again if you need it\.\]$/,
    )
    expect(content(h.mock.requests[3])).not.toContain('big line 10 ')
    expectWellFormed(h.mock.requests[3])
  })

  it('a failing summary call is logged, reported, and the turn goes on with the history unchanged', async () => {
    const { h, agent } = await setup()
    h.mock.enqueue(
      ...readsToPressure(),
      reply.error(400, { message: 'summaries are broken today' }),
      read('d.txt', high),
      reply.text('Done anyway.'),
    )
    agent.followup('read the files')
    await agent.whenIdle()

    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
    const [event] = compactions(agent)
    expect(event?.data).toMatchObject({ reason: 'threshold', replaced: [] })
    expect(event?.data.error).toMatch(/^the summary call failed: INVALID_REQUEST: .*summaries are broken today/)
    expect(h.warnings.join('\n')).toMatch(/threshold compaction: the summary call failed: INVALID_REQUEST/)
    h.warnings.length = 0
    // One failure per turn: the later step under pressure makes no second summary call.
    expect(h.mock.requests.filter(isSummaryCall)).toHaveLength(1)
    expect(h.mock.requests).toHaveLength(6)
    expect(content(h.mock.requests[4])).toContain('alpha content of file a')
  })

  it('keeps the newest turn and merges an earlier summary into the next one', async () => {
    const { h, agent } = await setup({ keepSteps: 1 })
    const long = (text: string) => `${text}: ${'with plenty of detail '.repeat(40)}`
    h.mock.enqueue(
      reply.text(long('First answer')),
      reply.text(long('Second answer'), high),
      reply.text('- asked one'),
      reply.text(long('Third answer'), high),
      reply.text('- asked one, then two'),
      reply.text('Fourth answer.'),
    )
    for (const question of ['one', 'two', 'three', 'four']) {
      agent.followup(long(`question ${question}`))
      await agent.whenIdle()
    }
    const summaries = h.mock.requests.filter(isSummaryCall)
    expect(summaries).toHaveLength(2)
    expect(content(summaries[1])).toContain('[summary of earlier conversation]')
    expect(content(summaries[1])).toContain('- asked one')
    const last = wireMessages(h.mock.requests.at(-1))
    expect(last.map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'user'])
    expect(last[1].content).toContain('<compacted-summary>\n- asked one, then two\n</compacted-summary>')
    expect(last[2].content).toMatch(/^question three/)
    expect(last[3].content).toMatch(/^Third answer/)
    expect(compactions(agent).map((e) => e.data.reason)).toEqual(['threshold', 'threshold'])
  })
})

describe('context overflow', () => {
  const overflow = () =>
    reply.error(400, {
      message: "This model's maximum context length is 10000 tokens. However, you requested 12000 tokens.",
    })

  it('compacts and retries the step once', async () => {
    const { h, agent } = await setup()
    h.mock.enqueue(read('a.txt'), read('b.txt'), overflow(), reply.text('- read a.txt'), reply.text('Recovered.'))
    agent.followup('read files')
    await agent.whenIdle()

    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
    expect(compactions(agent)[0]?.data.reason).toBe('overflow')
    expect(ofType(agent, 'llm/retry')[0]?.data).toMatchObject({
      delayMs: 0,
      error: { code: 'CONTEXT_WINDOW_EXCEEDED' },
    })
    const retried = h.mock.requests[4]
    expect(content(retried)).toContain('<compacted-summary>')
    expect(content(retried)).not.toContain('alpha content of file a')
    expect(content(retried)).toContain('b-line 0')
    expectWellFormed(retried)
  })

  it('ends the turn with the overflow when the summary fails, and does not loop', async () => {
    const run = await setup()
    const { h, agent } = run
    await overflowingTurn(run, 1, 'read files', read('a.txt'), read('b.txt'), overflow(), reply.error(500))
    expect(compactions(agent)[0]?.data.error).toMatch(/^the summary call failed: SERVER/)
    h.warnings.length = 0

    await overflowingTurn(run, 2, 'again', read('c.txt'), overflow(), reply.text('- summary'), overflow())
    expect(h.mock.requests).toHaveLength(8)
  })
})

describe('ctx.compaction.compact (the /compact command)', () => {
  it('summarises the turns before the newest one on an idle agent and saves the log', async () => {
    const { h, agent } = await setup({}, { persistence: true })
    h.mock.enqueue(
      reply.text(`One. ${'A long first answer. '.repeat(30)}`),
      reply.text('Two.'),
      reply.text('- the user asked one'),
    )
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()

    const result = await h.root.compaction.compact(agent, { reason: 'manual' })
    expect(result).toEqual({ compacted: true, replaced: 2 })
    expect(compactions(agent)[0]?.data).toMatchObject({ reason: 'manual', replaced: expect.any(Array) })
    const history = agent.session
      .deriveMessages()
      .map((m) => [m.role, m.content.map((b) => (b.type === 'text' ? b.text : '')).join('')])
    expect(history.slice(1)).toEqual([
      ['user', expect.stringContaining('- the user asked one')],
      ['user', 'two'],
      ['assistant', 'Two.'],
    ])

    // The replacement survives a resume: the history is rebuilt from the log.
    await h.root.agents.dispose(agent)
    const { agent: resumed } = await h.root.agents.resume(agent.id)
    expect(resumed.session.deriveMessages()).toEqual(agent.session.deriveMessages())
    await h.root.agents.dispose(resumed)
  })

  it('has nothing to do on a short history, and refuses while the agent runs', async () => {
    const { h, agent } = await setup()
    expect(await h.root.compaction.compact(agent)).toEqual({ compacted: false, replaced: 0 })
    h.mock.enqueue(reply.stall(1))
    agent.followup('hello')
    await h.mock.waitForRequests(1)
    expect(await h.root.compaction.compact(agent)).toEqual({
      compacted: false,
      replaced: 0,
      error: expect.stringMatching(/is running a turn/),
    })
    agent.cancel()
    await agent.whenIdle()
    expect(compactions(agent)).toEqual([])
  })
})

describe('plugin lifetime', () => {
  it('disposing the plugin removes ctx.compaction, its listeners and its event type', async () => {
    const { h, fiber, agent } = await setup({ auto: true })
    expect(h.root.sessions.isKnownType('context/compaction')).toBe(true)
    await fiber.dispose()
    expect(h.root.get('compaction')).toBeUndefined()
    expect(h.root.sessions.isKnownType('context/compaction')).toBe(false)
    h.mock.enqueue(read('a.txt'), read('b.txt'), read('c.txt', high), reply.text('No compaction.'))
    agent.followup('read')
    await agent.whenIdle()
    expect(h.mock.requests).toHaveLength(4)
    expect(h.mock.requests.some(isSummaryCall)).toBe(false)
  })

  it('with auto off, pressure does not compact', async () => {
    const { h, agent } = await setup({ auto: false })
    h.mock.enqueue(read('a.txt'), read('b.txt'), read('c.txt', high), reply.text('Fine.'))
    agent.followup('read')
    await agent.whenIdle()
    expect(h.mock.requests.some(isSummaryCall)).toBe(false)
    expect(compactions(agent)).toEqual([])
  })
})
