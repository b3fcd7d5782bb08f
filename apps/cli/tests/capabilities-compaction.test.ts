import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type MockReply, type RecordedRequest, reply } from '@dsh/llm-mock'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { type LoggedEvent, onlyStoredSession, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

afterEach(() => t.mock.setFallback(undefined))

type Message = { role: string; content: string | null; tool_calls?: { function: { arguments: string } }[] }
const messages = (req: RecordedRequest) => (req.body as { messages: Message[] }).messages
const wire = (req: RecordedRequest | undefined) => JSON.stringify(req ? messages(req) : null)
const isAgent = (req: RecordedRequest) => Array.isArray((req.body as { tools?: unknown }).tools)
const isTitle = (req: RecordedRequest) => !isAgent(req) && wire(req).includes('You name conversations')
const isSummary = (req: RecordedRequest) => !isAgent(req) && wire(req).includes('<conversation>')

/** The context window the patch gives the default model: small enough that the mock's usage can fill it. */
const WINDOW = 10_000
const high = { usage: { promptCacheMissTokens: 9_000, completionTokens: 20 } }
const read = (file: string, options = {}) =>
  reply.toolCalls([{ name: 'read', arguments: { file_path: file } }], options)

let patch = ''
beforeEach(async () => {
  patch = path.join(t.root, 'small-window.yml')
  await writeFile(
    patch,
    `- id: llm-deepseek\n  config:\n    models:\n      - id: deepseek-v4-flash\n        contextWindow: ${WINDOW}\n`,
  )
  for (const name of ['a', 'b', 'c']) {
    const lines = Array.from(
      { length: 30 },
      (_, i) => `${name}-line ${i}: content of file ${name}${name === 'a' ? ' (alpha)' : ''}`,
    )
    await writeFile(path.join(t.work, `${name}.txt`), `${lines.join('\n')}\n`)
  }
})

/** Answers agent requests from `agent` in order, and title and summary requests with their own replies. */
function route(agent: (MockReply | (() => Promise<MockReply>))[], side: { title?: MockReply; summary: MockReply }) {
  const queue = [...agent]
  t.mock.setFallback(async (req) => {
    if (isTitle(req)) return side.title ?? reply.error(500, { message: 'no title scripted' })
    if (isSummary(req)) return side.summary
    const next = queue.shift() ?? reply.error(500, { message: 'no agent reply scripted' })
    return typeof next === 'function' ? next() : next
  })
}

const onlySession = () => onlyStoredSession(t.home)

/** Resolves once the stored session log (still open, so plain JSONL) mentions `text`. */
async function untilStored(text: string): Promise<void> {
  for (;;) {
    const dir = path.join(t.home, 'sessions')
    const file = existsSync(dir) ? readdirSync(dir).find((f) => f.endsWith('.jsonl')) : undefined
    if (file && readFileSync(path.join(dir, file), 'utf8').includes(text)) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const ofType = (events: LoggedEvent[], type: string) => events.filter((e) => e.type === type)

describe('compaction through the headless app', () => {
  it('compacts mid-task under context pressure, continues correctly, and titles the session', async () => {
    route(
      [
        read('a.txt'),
        read('b.txt'),
        read('c.txt', high),
        // The last reply waits until the title is stored, so the run cannot end before the side call did.
        async () => {
          await untilStored('"session/title"')
          return reply.text('All three files read.')
        },
      ],
      { title: reply.text('Reading three files'), summary: reply.text('- read a.txt: thirty lines, one marked alpha') },
    )
    const result = await t.headless(['--patch', patch, 'read a.txt, b.txt and c.txt'], { DSH_SESSION_TITLES: 'on' })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('All three files read.\n')

    const agentRequests = t.mock.requests.filter(isAgent)
    expect(agentRequests).toHaveLength(4)
    const summaryCall = t.mock.requests.find(isSummary)
    expect(summaryCall?.body.thinking).toEqual({ type: 'disabled' })
    expect(wire(summaryCall)).toContain('a-line 0: content of file a (alpha)')

    // The request after the compaction: the task, the summary, then the two newest steps verbatim.
    const after = agentRequests[3] as RecordedRequest
    const history = messages(after)
    expect(history.map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'tool', 'assistant', 'tool'])
    expect(history[1]?.content).toBe('read a.txt, b.txt and c.txt')
    expect(history[2]?.content).toContain(
      '<compacted-summary>\n- read a.txt: thirty lines, one marked alpha\n</compacted-summary>',
    )
    expect(wire(after)).not.toContain('content of file a (alpha)')
    expect(history.flatMap((m) => m.tool_calls ?? []).map((c) => JSON.parse(c.function.arguments).file_path)).toEqual([
      'b.txt',
      'c.txt',
    ])
    expect(wire(after)).toContain('b-line 0')
    expect(wire(after)).toContain('c-line 29')

    const { events } = await readSessionLog(t.home, onlySession())
    const [compaction] = ofType(events, 'context/compaction')
    const replies = ofType(events, 'assistant/message')
    const results = ofType(events, 'tool/result')
    expect(compaction?.data).toMatchObject({ reason: 'threshold', replaced: [replies[0]?.seq, results[0]?.seq] })
    expect(compaction?.data.tokensBefore).toBeGreaterThanOrEqual(9_000)
    const summary = ofType(events, 'user/message').find((e) => e.data.message.source.kind === 'plugin')
    expect(summary?.replaces).toEqual([replies[0]?.seq, results[0]?.seq])
    // The log keeps the replaced step.
    expect(JSON.stringify(results[0])).toContain('content of file a (alpha)')
    expect(ofType(events, 'session/title').map((e) => e.data)).toEqual([
      { title: 'Reading three files', source: 'model' },
    ])
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
  })

  it('a failing summary call is reported and the task still completes', async () => {
    route([read('a.txt'), read('b.txt'), read('c.txt', high), reply.text('Done without compaction.')], {
      summary: reply.error(400, { message: 'summaries are unavailable' }),
    })
    const result = await t.headless(['--patch', patch, 'read the files'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Done without compaction.\n')
    expect(result.stderr).toMatch(
      /threshold compaction: the summary call failed: INVALID_REQUEST: .*summaries are unavailable/,
    )
    // Titles are off in tests unless asked for: no side call besides the summary.
    expect(t.mock.requests.filter((req) => !isAgent(req))).toEqual([
      expect.objectContaining({ answer: expect.any(String) }),
    ])
    expect(wire(t.mock.requests.filter(isAgent)[3])).toContain('content of file a (alpha)')

    const { events } = await readSessionLog(t.home, onlySession())
    const [compaction] = ofType(events, 'context/compaction')
    expect(compaction?.data).toMatchObject({ reason: 'threshold', replaced: [] })
    expect(compaction?.data.error).toMatch(/summaries are unavailable/)
    expect(ofType(events, 'session/title')).toEqual([])
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
  })

  it('a title call still in flight when the task ends is dropped quietly; the run exits at once', async () => {
    const titleAsked = async () => {
      while (!t.mock.requests.some(isTitle)) await new Promise((resolve) => setTimeout(resolve, 20))
      return reply.text('Quick answer.')
    }
    route([titleAsked], { title: reply.stall(1, reply.text('Never finished')), summary: reply.text('unused') })
    const result = await t.headless(['a quick question'], { DSH_SESSION_TITLES: 'on' })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Quick answer.\n')
    expect(result.stderr).toBe('')
    expect(t.mock.requests.filter(isTitle)).toHaveLength(1)
    const { events } = await readSessionLog(t.home, onlySession())
    expect(ofType(events, 'session/title')).toEqual([])
  })
})
