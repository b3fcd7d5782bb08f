import type { SessionEvent } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import { recentHistory } from '../src/history.ts'

let seq = 0
const event = (type: string, data: unknown) => ({ seq: seq++, time: seq, type, data }) as SessionEvent
const usage = (inputTokens: number) => ({ inputTokens, outputTokens: 10, cacheReadTokens: 5 })
const reply = (turn: number, model: string, tokens: number) =>
  event('assistant/message', {
    turn,
    step: 1,
    finish: 'stop',
    usage: usage(tokens),
    message: { id: 'a', role: 'assistant', content: [], source: { kind: 'model', provider: 'p', model } },
  })

function turn(n: number, model: string, extra: SessionEvent[] = []): SessionEvent[] {
  return [
    event('turn/start', { turn: n }),
    event('request/header', { reason: 'initial', provider: 'p', model, tools: [] }),
    ...extra,
    reply(n, model, 100 * n),
    event('turn/end', { turn: n, reason: 'completed' }),
  ]
}

describe('recentHistory', () => {
  seq = 0
  const preset = event('permission/preset', { preset: 'read-only' })
  const first = turn(1, 'flash', [event('todo/write', { todos: [] })])
  const failed = event('assistant/attempt', {
    turn: 2,
    step: 1,
    attempt: 1,
    error: { code: 'SERVER', message: 'busy' },
    usage: usage(7),
  })
  const second = turn(2, 'pro', [failed, event('session/title', { title: 'T', source: 'user' })])
  const third = turn(3, 'flash')
  const log = [preset, ...first, ...second, ...third]
  // Numbered in log order (the events inside a turn were made before its start).
  for (const [i, e] of log.entries()) Object.assign(e, { seq: i })

  it('cuts at the start of the turn its last events begin in, and sums what it left out per model', () => {
    const { events, earlier } = recentHistory(log, 2)
    expect(events).toEqual(third)
    expect(earlier?.before).toBe(third[0]?.seq)
    expect(earlier?.state.map((e) => e.type)).toEqual([
      'permission/preset',
      'todo/write',
      'request/header',
      'session/title',
    ])
    expect(earlier?.state.find((e) => e.type === 'request/header')).toBe(second[1])
    // The failed attempt counts for the model of the request it belonged to.
    expect(earlier?.usage).toEqual([
      { model: 'flash', usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 5, reasoningTokens: 0 } },
      { model: 'pro', usage: { inputTokens: 207, outputTokens: 20, cacheReadTokens: 10, reasoningTokens: 0 } },
    ])
  })

  it('takes every turn its tail reaches into, and the whole log when the tail reaches the first turn', () => {
    expect(recentHistory(log, third.length).events).toEqual(third)
    expect(recentHistory(log, third.length + 1).events).toEqual([...second, ...third])
    expect(recentHistory(log, log.length)).toEqual({ events: log })
    expect(recentHistory(log, log.length - 1)).toMatchObject({
      events: log.slice(1),
      earlier: { before: 1, state: [preset], usage: [] },
    })
  })
})
