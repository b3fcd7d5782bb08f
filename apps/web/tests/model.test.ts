import {
  type DshApi,
  isEvent,
  type LiveConnection,
  type SessionDetail,
  type SessionEvent,
  type SessionHandlers,
  type SessionId,
  type TokenUsage,
} from '@dsh/web-client'
import { Marked } from 'marked'
import { describe, expect, it, vi } from 'vitest'
import { parseCommand } from '../src/lib/commands.ts'
import { additionDiff, parseUnifiedDiff } from '../src/lib/diff.ts'
import { plainParagraphs } from '../src/lib/plain-markdown.ts'
import { insertMention, triggerAt } from '../src/lib/triggers.ts'
import { ConversationModel } from '../src/model/conversation.ts'
import { SessionController } from '../src/model/session-controller.ts'

let seq = 0
function event(type: string, data: unknown): SessionEvent {
  return { seq: seq++, time: 1000 + seq * 100, type, data } as SessionEvent
}
const model = (name = 'deepseek-chat') => ({ kind: 'model', provider: 'deepseek', model: name })
const user = (text: string) =>
  event('user/message', {
    message: { id: 'u', role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } },
  })

describe('ConversationModel', () => {
  it('turns streamed deltas into rows that keep their keys when the reply lands', () => {
    seq = 0
    const m = new ConversationModel()
    m.applyEvent(event('turn/start', { turn: 1 }))
    m.applyEvent(user('hi'))
    m.applyDelta({ turn: 1, step: 1, kind: 'reasoning', index: 0, delta: 'Think' })
    m.applyDelta({ turn: 1, step: 1, kind: 'text', index: 1, delta: 'Hel' })
    m.applyDelta({ turn: 1, step: 1, kind: 'text', index: 1, delta: 'lo' })
    const streaming = m.snapshot()
    expect(streaming.running).toBe(true)
    expect(streaming.nodes.map((n) => [n.kind, n.key])).toEqual([
      ['user', 'e:1'],
      ['reasoning', 'm:1:1:0'],
      ['text', 'm:1:1:1'],
    ])
    expect(streaming.nodes[2]).toMatchObject({ text: 'Hello', streaming: true })
    const userRow = streaming.nodes[0]

    m.applyEvent(
      event('assistant/message', {
        turn: 1,
        step: 1,
        finish: 'stop',
        usage: { inputTokens: 1_000_000, outputTokens: 1_000_000, cacheReadTokens: 0 },
        message: {
          id: 'a',
          role: 'assistant',
          source: model(),
          content: [
            { type: 'reasoning', text: 'Think.' },
            { type: 'text', text: 'Hello!' },
          ],
        },
      }),
    )
    m.applyEvent(event('turn/end', { turn: 1, reason: 'completed' }))
    const done = m.snapshot()
    expect(done.nodes.map((n) => n.key)).toEqual(['e:1', 'm:1:1:0', 'm:1:1:1', `turn:1:${seq - 1}`])
    expect(done.nodes[2]).toMatchObject({ text: 'Hello!', streaming: false })
    expect(done.nodes[0]).toBe(userRow)
    expect(done.nodes[3]).toMatchObject({ kind: 'turn-end', reason: 'completed', durationMs: 300 })
    expect(done.nodes[3]).not.toHaveProperty('cost')
    expect(done.running).toBe(false)
    expect(m.snapshot()).toBe(done)

    // Cost and context come from the server's usage report, never from a price table here.
    const usage = { inputTokens: 1_000_000, outputTokens: 1_000_000, cacheReadTokens: 0, reasoningTokens: 0 }
    m.applyUsage({
      usage,
      costUsd: 0.7,
      turns: [{ turn: 1, usage, costUsd: 0.7, steps: 1 }],
      context: { tokens: 2_000_000, window: 4_000_000, percent: 50 },
    })
    const priced = m.snapshot()
    expect(priced.nodes[3]).toMatchObject({ kind: 'turn-end', cost: 0.7 })
    expect(priced).toMatchObject({ totalCost: 0.7, context: { percent: 50 } })
  })

  it('follows a tool call from arguments to result, with the permission decision, and ignores repeated events', () => {
    seq = 0
    const m = new ConversationModel()
    m.applyEvent(event('turn/start', { turn: 1 }))
    m.applyDelta({ turn: 1, step: 1, kind: 'tool-arguments', index: 0, delta: '{"path":' })
    expect(m.snapshot().nodes[0]).toMatchObject({ kind: 'tool', status: 'streaming', args: '{"path":' })
    const call = { type: 'tool-call', id: 'c1', name: 'edit', arguments: '{"file_path":"a.txt"}' }
    m.applyEvent(
      event('assistant/message', {
        turn: 1,
        step: 1,
        finish: 'tool-calls',
        message: { id: 'a', role: 'assistant', source: model(), content: [call] },
      }),
    )
    const toolCall = event('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'edit', arguments: call.arguments })
    m.applyEvent(toolCall)
    expect(m.snapshot().nodes).toHaveLength(1)
    expect(m.snapshot().nodes[0]).toMatchObject({ key: 'm:1:1:0', status: 'running', name: 'edit' })
    m.applyEvent(
      event('permission/decision', {
        callId: 'c1',
        tool: 'edit',
        preset: 'read-only',
        decision: 'ask',
        reason: 'writes',
        answer: 'reject',
      }),
    )
    m.applyEvent(
      event('tool/result', {
        turn: 1,
        step: 1,
        callId: 'c1',
        name: 'edit',
        error: { code: 'PERMISSION_REJECTED', message: 'no' },
        message: {
          id: 'r',
          role: 'user',
          source: { kind: 'tool', name: 'edit' },
          content: [
            { type: 'tool-result', toolCallId: 'c1', isError: true, content: [{ type: 'text', text: 'rejected' }] },
          ],
        },
      }),
    )
    m.applyEvent(toolCall)
    const [tool] = m.snapshot().nodes
    expect(tool).toMatchObject({ status: 'error', result: 'rejected', decision: { decision: 'ask', answer: 'reject' } })
    expect(m.snapshot().nodes).toHaveLength(1)
  })

  it('drops the drafts of a failed attempt, shows the retry, and marks streaming rows partial after a reconnect', () => {
    seq = 0
    const m = new ConversationModel()
    m.applyEvent(event('turn/start', { turn: 1 }))
    m.applyDelta({ turn: 1, step: 1, kind: 'text', index: 0, delta: 'broken' })
    m.applyEvent(
      event('assistant/attempt', { turn: 1, step: 1, attempt: 1, error: { code: 'SERVER', message: 'busy' } }),
    )
    m.applyEvent(
      event('llm/retry', {
        turn: 1,
        step: 1,
        attempt: 1,
        delayMs: 1500,
        error: { code: 'SERVER', message: 'Server busy.' },
      }),
    )
    expect(m.snapshot().nodes.map((n) => n.kind)).toEqual(['notice'])
    expect(m.snapshot().nodes[0]).toMatchObject({ code: 'SERVER', text: 'Server busy. Retrying in 1.5 s (attempt 2).' })
    m.applyDelta({ turn: 1, step: 1, kind: 'text', index: 0, delta: 'again' })
    m.markResumed()
    expect(m.snapshot().nodes[1]).toMatchObject({ text: 'again', partial: true })
    m.applyEvent(
      event('turn/end', { turn: 1, reason: 'error', error: { code: 'AUTH', message: 'bad key', status: 401 } }),
    )
    expect(m.snapshot().nodes.at(-1)).toMatchObject({ kind: 'turn-end', error: { code: 'AUTH', status: 401 } })
  })
})

describe('opening a session from its recent part', () => {
  /** Turns of a user question and a priced reply; the first also sets a title, todos and plan mode. */
  function log(turns: number): SessionEvent[] {
    seq = 0
    const events: SessionEvent[] = [event('session/title', { title: 'Long one', source: 'user' })]
    for (let turn = 1; turn <= turns; turn++) {
      events.push(event('turn/start', { turn }), user(`Question ${turn}`))
      events.push(
        event('request/header', {
          reason: 'initial',
          provider: 'deepseek',
          model: 'deepseek-chat',
          reasoningEffort: 'high',
          tools: [],
        }),
      )
      if (turn === 1)
        events.push(
          event('todo/write', { todos: [{ content: 'Read the code', status: 'in_progress' }] }),
          event('plan/mode', { active: true }),
        )
      const usage = { inputTokens: 1000 * turn, outputTokens: 100, cacheReadTokens: 10, reasoningTokens: 5 }
      events.push(
        event('assistant/message', {
          turn,
          step: 1,
          finish: 'stop',
          usage,
          message: {
            id: `a${turn}`,
            role: 'assistant',
            source: model(),
            content: [{ type: 'text', text: `Answer ${turn}` }],
          },
        }),
      )
      events.push(event('turn/end', { turn, reason: 'completed' }))
    }
    return events
  }

  /** What `GET /api/sessions/:id?tail=` answers for the turns from `fromTurn` on (the server's sums, written out). */
  function recent(events: SessionEvent[], fromTurn: number): SessionDetail {
    const start = events.findIndex((e) => e.type === 'turn/start' && (e.data as { turn: number }).turn === fromTurn)
    const left = events.slice(0, start)
    const replies = left.flatMap((e) => (isEvent(e, 'assistant/message') && e.data.usage ? [e.data.usage] : []))
    const sum = (key: keyof TokenUsage) => replies.reduce((n, u) => n + (u[key] ?? 0), 0)
    const latest = (type: string) => left.findLast((e) => e.type === type) as SessionEvent
    return {
      session: {
        sessionId: 's' as SessionId,
        cwd: '/w',
        createdAt: 0,
        running: false,
        permissionPreset: 'workspace-write',
      },
      events: events.slice(start),
      earlier: {
        before: (events[start] as SessionEvent).seq,
        state: [latest('session/title'), latest('todo/write'), latest('plan/mode'), latest('request/header')].sort(
          (a, b) => a.seq - b.seq,
        ),
        usage: [
          {
            model: 'deepseek-chat',
            usage: {
              inputTokens: sum('inputTokens'),
              outputTokens: sum('outputTokens'),
              cacheReadTokens: sum('cacheReadTokens'),
              reasoningTokens: sum('reasoningTokens'),
            },
          },
        ],
      },
    }
  }

  function open(detail: SessionDetail, earlier: () => Promise<{ events: SessionEvent[] }>) {
    vi.stubGlobal('requestAnimationFrame', (callback: () => void) => setTimeout(callback))
    vi.stubGlobal('cancelAnimationFrame', (id: number) => clearTimeout(id))
    let handlers: SessionHandlers | undefined
    const api = { getSession: async () => detail, getEvents: earlier } as unknown as DshApi
    const live = {
      subscribe: (_id: string, _after: number, h: SessionHandlers) => {
        handlers = h
        return () => {}
      },
    } as unknown as LiveConnection
    const controller = new SessionController(api, live, 's' as SessionId)
    return { controller, live: () => handlers as SessionHandlers }
  }

  it('shows the whole session totals and state at once, then the whole conversation exactly as a full load would', async () => {
    const events = log(8)
    const next = event('turn/start', { turn: 9 })
    const full = new ConversationModel()
    for (const e of [...events, next]) full.applyEvent(e)
    full.applyDelta({ turn: 9, step: 1, kind: 'text', index: 0, delta: 'Stream' })

    const detail = recent(events, 7)
    const { controller, live } = open(detail, async () => ({
      events: events.filter((e) => e.seq < (detail.earlier?.before ?? 0)),
    }))
    await controller.load()
    const first = controller.get().conversation
    const wanted = full.snapshot()
    expect(first.totalUsage).toEqual(wanted.totalUsage)
    expect({
      title: first.title,
      todos: first.todos,
      planMode: first.planMode,
      model: first.model,
      effort: first.reasoningEffort,
    }).toEqual({
      title: 'Long one',
      todos: [{ content: 'Read the code', status: 'in_progress' }],
      planMode: true,
      model: 'deepseek-chat',
      effort: 'high',
    })
    expect(first.nodes[0]).toMatchObject({ kind: 'notice', text: 'Loading earlier messages…' })
    expect(first.nodes.filter((n) => n.kind === 'user').map((n) => (n as { text: string }).text)).toEqual([
      'Question 7',
      'Question 8',
    ])

    // Live changes that arrive before the earlier part are kept through the rebuild.
    live().event?.(next)
    live().delta?.({ turn: 9, step: 1, kind: 'text', index: 0, delta: 'Stream' })
    const report = {
      usage: wanted.totalUsage as Required<TokenUsage>,
      costUsd: 0.25,
      turns: [{ turn: 8, usage: wanted.totalUsage as Required<TokenUsage>, costUsd: 0.05, steps: 1 }],
      context: { tokens: 8110, window: 128_000, percent: 6.3 },
    }
    live().usage?.(report)
    full.applyUsage(report)
    await new Promise((resolve) => setTimeout(resolve)) // the controller renders on the next frame
    expect(controller.get().conversation).toMatchObject({ totalCost: 0.25, context: { percent: 6.3 } })
    await controller.loadEarlier()
    const whole = controller.get().conversation
    expect(whole.nodes).toEqual(full.snapshot().nodes)
    expect({ ...whole, nodes: [] }).toEqual({ ...full.snapshot(), nodes: [] })
    // Rows already on screen keep their keys.
    const keys = whole.nodes.map((n) => n.key)
    expect(keys.slice(keys.indexOf(first.nodes[1]?.key as string))).toEqual([
      ...first.nodes.slice(1).map((n) => n.key),
      'm:9:1:0',
    ])
    controller.dispose()
  })

  it('says so in the conversation when the earlier part cannot be read, and keeps the recent part', async () => {
    const events = log(4)
    const { controller } = open(recent(events, 4), async () => {
      throw new Error('the server went away')
    })
    await controller.load()
    await controller.loadEarlier()
    const nodes = controller.get().conversation.nodes
    expect(nodes[0]).toMatchObject({
      kind: 'notice',
      tone: 'error',
      text: 'Earlier messages could not be loaded: the server went away',
    })
    expect(nodes.filter((n) => n.kind === 'user')).toHaveLength(1)
    controller.dispose()
  })
})

describe('composer helpers', () => {
  // A known command is parsed; other slash text (an unknown name, a command mid-sentence) goes to the model.
  it.each([
    ['/model deepseek-v4-pro', { name: 'model', arg: 'deepseek-v4-pro' }],
    [' /compact ', { name: 'compact', arg: '' }],
    ['/review this file', undefined],
    ['use /compact later', undefined],
  ])('parses %j as %j', (line, parsed) => {
    expect(parseCommand(line)).toEqual(parsed)
  })

  it('finds the trigger at the caret and inserts a mention', () => {
    expect(triggerAt('/mo', 3)).toEqual({ kind: 'command', query: 'mo' })
    expect(triggerAt('/model deep', 11)).toEqual({ kind: 'model', query: 'deep' })
    const mention = triggerAt('look at @src/ma please', 15)
    expect(mention).toEqual({ kind: 'mention', query: 'src/ma', start: 8, end: 15 })
    expect(insertMention('look at @src/ma please', mention as never, 'src/main.ts')).toEqual({
      text: 'look at @src/main.ts  please',
      caret: 21,
    })
    expect(triggerAt('mail me@example.com', 19)).toBeUndefined()
  })
})

describe('diffs', () => {
  it('numbers the lines of a unified diff after a preamble', () => {
    const diff = parseUnifiedDiff('Edited a.txt.\n\n--- a.txt\n+++ a.txt\n@@ -2,3 +2,3 @@\n one\n-two\n+TWO\n three')
    expect(diff).toMatchObject({ path: 'a.txt', added: 1, removed: 1 })
    expect(diff?.lines.map((l) => [l.kind, l.oldNo, l.newNo])).toEqual([
      ['hunk', undefined, undefined],
      ['context', 2, 2],
      ['del', 3, undefined],
      ['add', undefined, 3],
      ['context', 4, 4],
    ])
    expect(parseUnifiedDiff('no diff here')).toBeUndefined()
    expect(additionDiff('n.txt', 'a\nb\n')).toMatchObject({ added: 2, removed: 0 })
  })

  it('ends a diff at an empty line: text after it (a language server report) is not part of it', () => {
    const diff = parseUnifiedDiff(
      'Edited a.ts.\n\n--- a.ts\n+++ a.ts\n@@ -1 +1 @@\n-x\n+y\n \n\nLanguage server diagnostics (1 error):\na.ts:1:1 error',
    )
    expect(diff?.lines.map((l) => l.kind)).toEqual(['hunk', 'del', 'add', 'context'])
  })
})

describe('plain paragraphs', () => {
  // The same HTML and block keys as the Markdown engine (marked with GFM, as lib/markdown.ts uses it).
  const engine = (text: string) => {
    const marked = new Marked({ gfm: true })
    const tokens = marked.lexer(text)
    let offset = 0
    const blocks: Array<{ key: string; html: string }> = []
    for (const token of tokens) {
      if (token.type !== 'space')
        blocks.push({
          key: `${offset}`,
          html: marked.parser(Object.assign([token], { links: tokens.links })).replaceAll('&quot;', '&#34;'),
        })
      offset += token.raw.length
    }
    return blocks
  }

  it('renders text with nothing to interpret exactly as the Markdown engine does', () => {
    for (const text of [
      'The agent reads files and runs the tests.',
      'First line\nsecond line, with (parentheses) and 100% "quotes" it\'s fine.\n\n\nA new paragraph: a - b = c + d / e; why? yes!',
      'Trailing newline\n',
      '\nLeading newline then text',
      '',
    ]) {
      expect(plainParagraphs(text), text).toEqual(engine(text))
    }
  })

  it('leaves anything Markdown would interpret to the engine', () => {
    for (const text of [
      'some **bold** text',
      'a `code` span',
      'see https://example.com',
      'see www.example.com',
      'mail me@example.com',
      '- a list',
      '1. a list',
      '# heading',
      'Heading\n===',
      '    indented code',
      'hard break  \nnext line',
      'a <b>tag</b>',
      'an &amp; entity',
      'a [link](x)',
      'a | table',
      'under_score',
      'back\\slash',
      'tilde ~strike~',
      'Ünïcode letters',
    ]) {
      expect(plainParagraphs(text), text).toBeUndefined()
    }
  })
})
