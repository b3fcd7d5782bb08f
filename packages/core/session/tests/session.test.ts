import { Context } from '@dsh/cordis'
import type { Message, ToolCallId } from '@dsh/llm'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { closersForOpenTurn, type SessionEvent, SessionFormatError, SessionStore, textMessage } from '../src/index.ts'

let root: Context
let store: SessionStore

beforeEach(async () => {
  root = new Context()
  await root.plugin(SessionStore)
  store = root.sessions
})
afterEach(() => root.fiber.dispose())

const user = (text: string) => ({ message: textMessage('user', text, { kind: 'user' }) })
const reply = (turn: number, step: number, message: Message) => ({ turn, step, message, finish: 'stop' as const })

describe('Session', () => {
  it('appends frozen events with contiguous seqs and publishes them', () => {
    const seen: string[] = []
    root.on('session/event', (_s, e) => void seen.push(`${e.seq}:${e.type}`))
    const session = store.create({ cwd: '/w' })
    session.append('turn/start', { turn: 1 })
    const event = session.append('user/message', user('hi'))
    expect(event.seq).toBe(1)
    expect(Object.isFrozen(event.data.message.content[0])).toBe(true)
    expect(seen).toEqual(['0:turn/start', '1:user/message'])
  })

  it('refuses data that is not lossless JSON, naming the path', () => {
    const session = store.create({ cwd: '/w' })
    expect(() => session.append('turn/start', { turn: Number.NaN })).toThrow('turn/start.data.turn is NaN')
    expect(() => session.append('step/start', { turn: 1, step: new Date() as unknown as number })).toThrow(
      'is a Date instance',
    )
    expect(session.events).toHaveLength(0)
  })

  it('refuses an append from inside a session/event listener', () => {
    const session = store.create({ cwd: '/w' })
    const errors: string[] = []
    root.on('session/event', (s) => {
      try {
        s.append('step/end', { turn: 1, step: 1 })
      } catch (e) {
        errors.push((e as Error).message)
      }
    })
    session.append('turn/start', { turn: 1 })
    expect(errors[0]).toMatch(/cannot append step\/end while an event is being published/)
  })

  it('keeps delivering events when a listener throws', () => {
    const session = store.create({ cwd: '/w' })
    const seen: number[] = []
    root.on('session/event', () => {
      throw new Error('bad subscriber')
    })
    root.on('session/event', (_s, e) => void seen.push(e.seq))
    session.append('turn/start', { turn: 1 })
    expect(seen).toEqual([0])
  })

  it('derives model history from surface events and follows replacements', () => {
    const session = store.create({ cwd: '/w' })
    const a = session.append('user/message', user('first'))
    session.append('turn/start', { turn: 1 })
    const b = session.append(
      'assistant/message',
      reply(1, 1, textMessage('assistant', 'answer', { kind: 'model', provider: 'p', model: 'm' })),
    )
    session.append(
      'assistant/message',
      reply(1, 2, { ...textMessage('assistant', '', { kind: 'model', provider: 'p', model: 'm' }), content: [] }),
    )
    session.append('user/message', user('second'))
    expect(session.deriveMessages().map((m) => m.content[0]?.type === 'text' && m.content[0].text)).toEqual([
      'first',
      'answer',
      'second',
    ])
    session.append('user/message', user('summary of first and answer'), { replaces: [a.seq, b.seq] })
    expect(session.deriveMessages().map((m) => m.content[0]?.type === 'text' && m.content[0].text)).toEqual([
      'summary of first and answer',
      'second',
    ])
    expect(session.events).toHaveLength(6)
  })
})

describe('SessionStore', () => {
  function finishedTurn(turn: number) {
    const s = store.create({ cwd: '/w' })
    for (let t = 1; t <= turn; t++) {
      s.append('turn/start', { turn: t })
      s.append('user/message', user(`q${t}`))
      s.append('turn/end', { turn: t, reason: 'completed' })
    }
    return s
  }

  it('forks at a turn boundary, linking the fork to its origin (not as a subagent child)', () => {
    const parent = finishedTurn(2)
    const child = store.fork(parent, { throughTurn: 1 })
    expect(child.meta.forkedFrom).toBe(parent.id)
    expect(child.meta.parentSession).toBeUndefined()
    expect(child.seedLength).toBe(3)
    expect(child.events.at(-1)?.type).toBe('session/end-seed')
    expect(child.deriveMessages()).toHaveLength(1)
  })

  it('refuses to fork inside an open turn', () => {
    const s = finishedTurn(1)
    s.append('turn/start', { turn: 2 })
    expect(() => store.fork(s)).toThrow(/in the middle of a turn/)
    expect(() => store.fork(s, { throughTurn: 5 })).toThrow(/no finished turn 5/)
  })

  it('publishes every event after session/event, holding them back while a hold is on until its release has flushed', async () => {
    const order: string[] = []
    root.on('session/event', (_s, e) => void order.push(`event ${e.seq}`))
    root.on('session/published', (_s, e) => void order.push(`published ${e.seq}`))
    root.on('session/flush', async () => void order.push('flush'))
    const s = store.create({ cwd: '/w' })
    s.append('turn/start', { turn: 0 })
    const release = store.holdPublished(s)
    s.append('turn/start', { turn: 1 })
    s.append('user/message', user('stored before it is shown'))
    expect(store.publishedEvents(s).map((e) => e.seq)).toEqual([0])
    const done = release()
    expect(release()).toBe(done)
    await done
    s.append('turn/end', { turn: 1, reason: 'completed' })
    expect(order).toEqual([
      'event 0',
      'published 0',
      'event 1',
      'event 2',
      'flush',
      'published 1',
      'published 2',
      'event 3',
      'published 3',
    ])
    expect(store.publishedEvents(s)).toEqual(s.events)
  })

  it('publishes held events when the session closes, and waits for the last of several holds', async () => {
    const published: number[] = []
    root.on('session/published', (_s, e) => void published.push(e.seq))
    const s = store.create({ cwd: '/w' })
    const first = store.holdPublished(s)
    const second = store.holdPublished(s)
    s.append('turn/start', { turn: 1 })
    await first()
    expect(published).toEqual([])
    await second()
    expect(published).toEqual([0])
    store.holdPublished(s)
    s.append('turn/end', { turn: 1, reason: 'completed' })
    await store.close(s)
    expect(published).toEqual([0, 1])
  })

  it('refuses unknown non-ignorable event types on load, skips ignorable ones', () => {
    const events = [
      { seq: 0, time: 1, type: 'turn/start', data: { turn: 1 } },
      { seq: 1, time: 1, type: 'plugin/thing', data: {}, ignorable: true },
    ] as unknown as SessionEvent[]
    expect(store.checkLoadable(events, 'f.jsonl')).toHaveLength(1)
    const bad = [{ seq: 0, time: 1, type: 'mystery/event', data: {} }] as unknown as SessionEvent[]
    expect(() => store.checkLoadable(bad, 'f.jsonl')).toThrow(SessionFormatError)
    expect(() => store.checkLoadable(bad, 'f.jsonl')).toThrow('f.jsonl: event 0 has type "mystery/event"')
    const off = store.registerEventType(root, 'mystery/event')
    expect(store.checkLoadable(bad, 'f.jsonl')).toHaveLength(1)
    off()
    expect(() => store.checkLoadable(bad, 'f.jsonl')).toThrow(SessionFormatError)
  })
})

describe('closersForOpenTurn', () => {
  it('closes a turn cut mid-tool: unknown outcome for started calls, not-started for the rest', () => {
    const s = store.create({ cwd: '/w' })
    s.append('turn/start', { turn: 1 })
    s.append('step/start', { turn: 1, step: 1 })
    const call = (id: string, name: string) => ({
      type: 'tool-call' as const,
      id: id as ToolCallId,
      name,
      arguments: '{}',
    })
    s.append(
      'assistant/message',
      reply(1, 1, {
        ...textMessage('assistant', '', { kind: 'model', provider: 'p', model: 'm' }),
        content: [call('c1', 'bash'), call('c2', 'read')],
      }),
    )
    s.append('tool/call', { turn: 1, step: 1, callId: 'c1' as ToolCallId, name: 'bash', arguments: '{}' })
    const closers = closersForOpenTurn(s.events)
    expect(closers.map((c) => [c.type, (c.data as { error?: { code: string } }).error?.code])).toEqual([
      ['tool/result', 'TOOL_OUTCOME_UNKNOWN'],
      ['tool/result', 'TOOL_NOT_STARTED'],
      ['step/end', undefined],
      ['turn/end', undefined],
    ])
    expect(closers.at(-1)?.data).toEqual({ turn: 1, reason: 'interrupted' })
  })

  it('adds nothing when the log ends at a turn boundary', () => {
    const s = store.create({ cwd: '/w' })
    s.append('turn/start', { turn: 1 })
    s.append('turn/end', { turn: 1, reason: 'completed' })
    expect(closersForOpenTurn(s.events)).toEqual([])
  })
})
