import type { Message, ToolCallId } from '@dsh/llm'
import { newMessageId, Session, type SessionId } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import { pairsIntact, prunable, summarisable, unitsOf } from '../src/plan.ts'

function message(
  role: Message['role'],
  text: string,
  source: Message['source'] = { kind: role === 'assistant' ? 'model' : 'user', provider: 'p', model: 'm' } as never,
): Message {
  return { id: newMessageId(), role, source, content: [{ type: 'text', text }] }
}

/** A log built step by step: `turn(user, ...steps)`, each step a reply calling `calls` tools (with result sizes). */
function build(
  turns: Array<{ user: string; steps: number[][]; steer?: string }>,
  options: { instructions?: boolean } = {},
): Session {
  const session = new Session({ id: 's' as SessionId, createdAt: 0, cwd: '/' }, [], () => {})
  session.append('system/message', { message: message('system', 'You are a test.', { kind: 'system' }) })
  if (options.instructions)
    session.append('user/message', {
      message: message('user', 'AGENTS.md', { kind: 'plugin', plugin: 'instructions', form: 'instructions' }),
    })
  let call = 0
  turns.forEach((t, index) => {
    const turn = index + 1
    session.append('turn/start', { turn })
    t.steps.forEach((sizes, i) => {
      const step = i + 1
      session.append('step/start', { turn, step })
      if (step === 1) session.append('user/message', { message: message('user', t.user) })
      if (step === 2 && t.steer) session.append('user/message', { message: message('user', t.steer) })
      const ids = sizes.map(() => `call-${++call}` as ToolCallId)
      const content = [
        { type: 'text' as const, text: `reply ${turn}.${step}` },
        ...ids.map((id) => ({ type: 'tool-call' as const, id, name: 'read', arguments: '{}' })),
      ]
      session.append('assistant/message', {
        turn,
        step,
        finish: 'stop',
        message: {
          id: newMessageId(),
          role: 'assistant',
          source: { kind: 'model', provider: 'p', model: 'm' },
          content,
        },
      })
      ids.forEach((id, k) => {
        const text = 'r'.repeat(sizes[k] ?? 1)
        session.append('tool/result', {
          turn,
          step,
          callId: id,
          name: 'read',
          message: {
            id: newMessageId(),
            role: 'user',
            source: { kind: 'tool', name: 'read' },
            content: [{ type: 'tool-result', toolCallId: id, content: [{ type: 'text', text }] }],
          },
        })
      })
      session.append('step/end', { turn, step })
    })
    session.append('turn/end', { turn, reason: 'completed' })
  })
  return session
}

const labels = (session: Session, seqs: number[]) =>
  seqs.map((seq) => {
    const event = session.events[seq]
    const data = event?.data as { message: Message }
    const block = data.message.content[0]
    return block?.type === 'text'
      ? block.text
      : block?.type === 'tool-result'
        ? `result ${block.toolCallId}`
        : event?.type
  })

describe('what compaction may summarise', () => {
  it('keeps the newest turn, its user messages and its newest steps; older steps go whole with their results', async () => {
    const session = build([
      { user: 'task one', steps: [[1], []] },
      { user: 'task two', steps: [[1, 1], [1], [1], []], steer: 'steer two' },
    ])
    const units = summarisable(unitsOf(session), { keepTurns: 1, keepSteps: 2 })
    const seqs = units.flatMap((u) => u.events.map((e) => e.seq))
    expect(labels(session, seqs)).toEqual([
      'task one',
      'reply 1.1',
      'result call-1',
      'reply 1.2',
      'reply 2.1',
      'result call-2',
      'result call-3',
      'reply 2.2',
      'result call-4',
    ])
    expect(pairsIntact(units.flatMap((u) => u.events))).toBe(true)
  })

  it('never touches the system prompt or pinned instructions, and keeps a short newest turn whole', async () => {
    const session = build(
      [
        { user: 'old', steps: [[1]] },
        { user: 'new', steps: [[1], []] },
      ],
      { instructions: true },
    )
    const seqs = summarisable(unitsOf(session), { keepTurns: 1, keepSteps: 2 }).flatMap((u) =>
      u.events.map((e) => e.seq),
    )
    expect(labels(session, seqs)).toEqual(['old', 'reply 1.1', 'result call-1'])
    expect(summarisable(unitsOf(session), { keepTurns: 2, keepSteps: 3 })).toEqual([])
  })

  it('prunes only large results older than the newest steps', async () => {
    const session = build([{ user: 'task', steps: [[5000, 10], [6000], [7000]] }])
    const victims = prunable(unitsOf(session), 2, 4000)
    expect(victims.map((e) => e.data.callId)).toEqual(['call-1'])
  })

  it('pairsIntact sees a call without its result', async () => {
    const session = build([{ user: 'task', steps: [[1, 1]] }])
    const events = session.events.filter(
      (e) => e.type === 'assistant/message' || (e.type === 'tool/result' && e.seq !== session.events.length - 3),
    )
    expect(pairsIntact(session.events)).toBe(true)
    expect(pairsIntact(events)).toBe(false)
  })
})
