import type { Agent, AgentStatus, StepInfo, TurnOutcome } from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import { reply } from '@dsh/llm-mock'
import { textMessage } from '@dsh/session'
import { STEP_OPENING } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import * as loopPlugin from '../src/index.ts'
import {
  events,
  type Harness,
  harnessPerTest,
  lastTurnEnd,
  ofType,
  textOf,
  turnEvents,
  typesOf,
  whenDelta,
  whenLogged,
  whenStreamed,
  wireMessages,
} from './harness.ts'

const setup = harnessPerTest()

/** What a one-step turn without tools logs, in order. */
const FIRST_STEP = [...STEP_OPENING, 'assistant/message', 'step/end', 'turn/end']

/** The step a steering message starts, through the end of the turn. */
const STEERED_STEP = ['step/start', 'user/message', 'assistant/message', 'step/end', 'turn/end']

/** Runs a second turn that the model answers plainly; resolves with the roles and texts its request carried. */
async function secondTurn(mock: Harness['mock'], agent: Agent, prompt: string): Promise<unknown[]> {
  mock.enqueue(reply.text('Go on.'))
  agent.followup(prompt)
  await agent.whenIdle()
  expect(lastTurnEnd(agent).data).toEqual({ turn: 2, reason: 'completed' })
  return wireMessages(mock.requests[1]).map((m) => [m.role, m.content])
}

function statusesOf(root: Context, agent: Agent): AgentStatus[] {
  const seen: AgentStatus[] = []
  root.on('agent/status', (from, status) => {
    if (from === agent) seen.push(status)
  })
  return seen
}

describe('a plain turn', () => {
  it('logs the turn in order with usage, ends completed, and goes running → idle', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    const statuses = statusesOf(root, agent)
    const outcomes: TurnOutcome[] = []
    root.on('agent/turn-end', (from, outcome) => void (from === agent && outcomes.push(outcome)))
    const deltas: string[] = []
    root.on('agent/delta', (from, delta) => void (from === agent && delta.kind === 'text' && deltas.push(delta.delta)))
    mock.enqueue(
      reply.text('Hello there, friend.', {
        reasoning: 'The user greets me.',
        usage: { promptCacheHitTokens: 30, promptCacheMissTokens: 12, completionTokens: 9, reasoningTokens: 5 },
      }),
    )

    agent.followup('hi')
    expect(agent.status).toBe('running')
    await agent.whenIdle()

    expect(typesOf(events(agent))).toEqual(FIRST_STEP)
    const [message] = ofType(agent, 'assistant/message')
    expect(message?.data).toMatchObject({
      turn: 1,
      step: 1,
      finish: 'stop',
      usage: { inputTokens: 12, outputTokens: 9, cacheReadTokens: 30, reasoningTokens: 5 },
    })
    expect(message?.data.interrupted).toBeUndefined()
    expect(message?.data.message.content).toEqual([
      { type: 'reasoning', text: 'The user greets me.' },
      { type: 'text', text: 'Hello there, friend.' },
    ])
    expect(message?.data.message.source).toEqual({ kind: 'model', provider: 'deepseek', model: 'deepseek-v4-flash' })
    expect(textOf(ofType(agent, 'user/message')[0]?.data.message ?? { content: [] })).toBe('hi')
    expect(ofType(agent, 'system/message')[0]?.data.message.role).toBe('system')
    expect(ofType(agent, 'request/header')[0]?.data).toMatchObject({
      reason: 'initial',
      provider: 'deepseek',
      model: 'deepseek-v4-flash',
    })
    expect(ofType(agent, 'request/header')[0]?.data.tools.map((t) => t.name)).toEqual([
      'bash',
      'edit',
      'glob',
      'grep',
      'hang',
      'ls',
      'probe',
      'read',
      'write',
    ])
    expect(ofType(agent, 'request/context')[0]?.data).toEqual({
      provider: 'deepseek',
      model: 'deepseek-v4-flash',
      contextWindow: 1_000_000,
    })
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })

    expect(statuses).toEqual(['running', 'idle'])
    expect(agent.status).toBe('idle')
    expect(outcomes).toEqual([{ turn: 1, reason: 'completed' }])
    expect(deltas.join('')).toBe('Hello there, friend.')

    expect(mock.requests).toHaveLength(1)
    const wire = wireMessages(mock.requests[0])
    expect(wire.map((m) => m.role)).toEqual(['system', 'user'])
    expect(wire[0].content).toMatch(/^You are dsh, an AI coding agent\./)
    expect(wire[1].content).toBe('hi')
    expect(mock.requests[0]?.headers.authorization).toBe('Bearer sk-test')
  })

  it('runs queued followups as turns of their own, and whenIdle waits for all of them', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    mock.enqueue(reply.text('First answer.'), reply.text('Second answer.'))
    agent.followup('first')
    agent.followup('second')
    await agent.whenIdle()

    expect(ofType(agent, 'turn/end').map((e) => e.data)).toEqual([
      { turn: 1, reason: 'completed' },
      { turn: 2, reason: 'completed' },
    ])
    expect(typesOf(turnEvents(agent, 2))).toEqual(['turn/start', ...STEERED_STEP])
    const wire = wireMessages(mock.requests[1])
    expect(wire.map((m) => [m.role, m.content])).toEqual([
      ['system', expect.any(String)],
      ['user', 'first'],
      ['assistant', 'First answer.'],
      ['user', 'second'],
    ])
  })
})

describe('cancel during the stream', () => {
  it('keeps the text that streamed as an interrupted message; the next followup works', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    const statuses = statusesOf(root, agent)
    mock.enqueue(reply.stall(3, reply.text('Hello there friend, this reply never finishes.')))
    const streamed = whenStreamed(root, agent, 'Hello there ')
    agent.followup('hi')
    expect(await streamed).toBe('Hello there ')
    agent.cancel()
    await agent.whenIdle()

    expect(typesOf(events(agent))).toEqual(FIRST_STEP)
    const [message] = ofType(agent, 'assistant/message')
    expect(message?.data).toMatchObject({ turn: 1, step: 1, finish: 'aborted', interrupted: true })
    expect(message?.data.message.content).toEqual([{ type: 'text', text: 'Hello there ' }])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'aborted', cause: 'user' })
    expect(agent.status).toBe('idle')
    expect(statuses).toEqual(['running', 'idle'])

    expect(await secondTurn(mock, agent, 'continue')).toEqual([
      ['system', expect.any(String)],
      ['user', 'hi'],
      ['assistant', 'Hello there '],
      ['user', 'continue'],
    ])
    expect(statuses).toEqual(['running', 'idle', 'running', 'idle'])
  })

  it('logs an attempt when nothing streamed, and nothing model-visible', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    mock.enqueue(reply.stall(1))
    agent.followup('hi')
    await mock.waitForRequests(1)
    agent.cancel()
    await agent.whenIdle()

    expect(typesOf(events(agent))).toEqual([...STEP_OPENING, 'assistant/attempt', 'step/end', 'turn/end'])
    expect(ofType(agent, 'assistant/attempt')[0]?.data).toMatchObject({
      turn: 1,
      step: 1,
      attempt: 1,
      error: { code: 'ABORTED' },
    })
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'aborted', cause: 'user' })
    expect(agent.status).toBe('idle')

    expect(await secondTurn(mock, agent, 'hello?')).toEqual([
      ['system', expect.any(String)],
      ['user', 'hi'],
      ['user', 'hello?'],
    ])
  })

  it('drops a half-streamed tool call: only the text is kept, and no tool runs', async () => {
    const { root, mock, createAgent, probe } = await setup()
    const agent = await createAgent()
    // role, four words of text, the call's first fragment (id and name), one arguments fragment; then silence.
    mock.enqueue(
      reply.stall(7, reply.toolCalls([{ name: 'probe', arguments: { id: 'a' } }], { content: 'I will probe it.' })),
    )
    const started = whenDelta(root, agent, (d) => d.kind === 'tool-arguments' && d.delta.length > 0)
    agent.followup('probe a')
    await started
    agent.cancel()
    await agent.whenIdle()

    const [message] = ofType(agent, 'assistant/message')
    expect(message?.data).toMatchObject({ interrupted: true, finish: 'aborted' })
    expect(message?.data.message.content).toEqual([{ type: 'text', text: 'I will probe it.' }])
    expect(ofType(agent, 'tool/call')).toHaveLength(0)
    expect(ofType(agent, 'tool/result')).toHaveLength(0)
    expect(probe.started).toHaveLength(0)
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'aborted', cause: 'user' })
  })

  it('clears queued followups', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    mock.enqueue(reply.stall(1))
    agent.followup('first')
    agent.followup('second')
    await mock.waitForRequests(1)
    agent.cancel()
    await agent.whenIdle()
    expect(ofType(agent, 'turn/start')).toHaveLength(1)
    expect(ofType(agent, 'user/message').map((m) => textOf(m.data.message))).toEqual(['first'])
    expect(mock.requests).toHaveLength(1)
  })

  it('a followup sent after the cancel gets a turn of its own', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    mock.enqueue(reply.stall(1), reply.text('Second.'))
    agent.followup('first')
    await mock.waitForRequests(1)
    agent.cancel()
    agent.followup('second')
    await agent.whenIdle()
    expect(ofType(agent, 'turn/end').map((e) => e.data)).toEqual([
      { turn: 1, reason: 'aborted', cause: 'user' },
      { turn: 2, reason: 'completed' },
    ])
  })

  it('does nothing while idle and does not arm later work', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    agent.cancel()
    mock.enqueue(reply.text('Fine.'))
    agent.followup('hi')
    await agent.whenIdle()
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
  })
})

describe('extension points', () => {
  it('agent/pre-step reject ends the turn without a step', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    const seen: Omit<StepInfo, 'signal'>[] = []
    root.on('agent/pre-step', async (_agent, step) => {
      seen.push({ turn: step.turn, step: step.step })
      return { kind: 'reject' }
    })
    agent.followup('hi')
    await agent.whenIdle()
    expect(typesOf(events(agent))).toEqual(['turn/start', 'turn/end'])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
    expect(seen).toEqual([{ turn: 1, step: 1 }])
    expect(mock.requests).toHaveLength(0)
  })

  it('agent/pre-step reject after a tool step ends the turn there', async () => {
    const { root, mock, createAgent, probe } = await setup()
    const agent = await createAgent()
    probe.autoRelease = true
    root.on('agent/pre-step', async (_agent, step, next) => (step.step === 2 ? { kind: 'reject' } : next()))
    mock.enqueue(reply.toolCalls([{ name: 'probe', arguments: { id: 'a' } }]))
    agent.followup('hi')
    await agent.whenIdle()
    expect(typesOf(events(agent)).slice(-5)).toEqual([
      'assistant/message',
      'tool/call',
      'tool/result',
      'step/end',
      'turn/end',
    ])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
    expect(mock.requests).toHaveLength(1)
  })

  it('an agent/turn-stopping listener that steers once gets one more step', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    const stops: number[] = []
    root.on('agent/turn-stopping', async (from, info) => {
      stops.push(info.turn)
      if (stops.length === 1) from.steer('Also say goodbye.')
    })
    mock.enqueue(reply.text('Hello.'), reply.text('Goodbye.'))
    agent.followup('hi')
    await agent.whenIdle()

    expect(stops).toEqual([1, 1])
    expect(typesOf(events(agent))).toEqual([...FIRST_STEP.slice(0, -1), ...STEERED_STEP])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
    expect(wireMessages(mock.requests[1]).map((m) => [m.role, m.content])).toEqual([
      ['system', expect.any(String)],
      ['user', 'hi'],
      ['assistant', 'Hello.'],
      ['user', 'Also say goodbye.'],
    ])
  })

  it('steering while a tool runs joins the next step, after the tool results', async () => {
    const { mock, createAgent, probe } = await setup()
    const agent = await createAgent()
    mock.enqueue(reply.toolCalls([{ name: 'probe', arguments: { id: 'a' } }]), reply.text('Checked a and b.'))
    agent.followup('check a')
    await probe.whenStarted(1)
    agent.steer('also check b')
    probe.release('a')
    await agent.whenIdle()

    expect(mock.requests).toHaveLength(2)
    expect(wireMessages(mock.requests[1]).map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user'])
    expect(wireMessages(mock.requests[1]).at(-1).content).toBe('also check b')
    expect(typesOf(turnEvents(agent, 1)).slice(-7)).toEqual(['tool/result', 'step/end', ...STEERED_STEP])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
  })

  it('steering while the reply streams joins the next step of the same turn', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    const off = root.on('agent/delta', (from) => {
      if (from !== agent) return
      off()
      agent.steer('and be brief')
    })
    mock.enqueue(reply.text('A long answer.'), reply.text('Brief.'))
    agent.followup('explain')
    await agent.whenIdle()

    expect(ofType(agent, 'turn/start')).toHaveLength(1)
    expect(
      wireMessages(mock.requests[1])
        .map((m) => [m.role, m.content])
        .slice(1),
    ).toEqual([
      ['user', 'explain'],
      ['assistant', 'A long answer.'],
      ['user', 'and be brief'],
    ])
  })

  it('a steer while idle starts a turn; an inject waits for the next wake and joins its first step', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    agent.inject(textMessage('user', 'Context: the build is red.', { kind: 'plugin', plugin: 'test', form: 'context' }))
    expect(agent.status).toBe('idle')
    expect(agent.session.events).toHaveLength(0)
    mock.enqueue(reply.text('On it.'))
    agent.steer('fix the build')
    await agent.whenIdle()
    expect(ofType(agent, 'turn/end').map((e) => e.data)).toEqual([{ turn: 1, reason: 'completed' }])
    expect(wireMessages(mock.requests[0]).slice(1)).toEqual([
      { role: 'user', content: 'Context: the build is red.' },
      { role: 'user', content: 'fix the build' },
    ])
  })

  it('a cancel while agent/request-error listeners decide ends the turn aborted, not failed', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    root.on(
      'agent/request-error',
      async (from, _info, next) => {
        from.cancel()
        return next()
      },
      { prepend: true },
    )
    mock.enqueue(reply.error(503))
    agent.followup('hi')
    await agent.whenIdle()
    expect(typesOf(events(agent)).slice(-4)).toEqual(['request/context', 'assistant/attempt', 'step/end', 'turn/end'])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'aborted', cause: 'user' })
    expect(mock.requests).toHaveLength(1)
  })

  it('an agent/request listener that throws ends the turn with an INTERNAL error; the next turn works', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    const errors: unknown[] = []
    root.on('agent/error', (from, error) => void (from === agent && errors.push(error)))
    let armed = true
    root.on('agent/request', async (_agent, _step, next) => {
      if (armed) {
        armed = false
        throw new Error('listener exploded')
      }
      return next()
    })
    agent.followup('hi')
    await agent.whenIdle()

    expect(typesOf(events(agent))).toEqual(['turn/start', 'step/start', 'step/end', 'turn/end'])
    expect(lastTurnEnd(agent).data).toMatchObject({
      turn: 1,
      reason: 'error',
      error: { code: 'INTERNAL', message: expect.stringContaining('listener exploded') },
    })
    expect(errors).toHaveLength(1)
    expect(mock.requests).toHaveLength(0)
    expect(agent.status).toBe('idle')

    mock.enqueue(reply.text('Working again.'))
    agent.followup('again')
    await agent.whenIdle()
    expect(lastTurnEnd(agent).data).toEqual({ turn: 2, reason: 'completed' })
    expect(wireMessages(mock.requests[0]).at(-1)).toEqual({ role: 'user', content: 'again' })
  })

  it('agent/request settles the model settings of the request', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    root.on('agent/request', async (_agent, _step, next) => ({
      ...(await next()),
      model: 'deepseek-v4-pro',
      reasoningEffort: 'off',
      maxTokens: 1000,
    }))
    mock.enqueue(reply.text('ok'))
    agent.followup('hi')
    await agent.whenIdle()
    expect(mock.requests[0]?.body).toMatchObject({
      model: 'deepseek-v4-pro',
      thinking: { type: 'disabled' },
      max_tokens: 1000,
    })
    expect(ofType(agent, 'request/header')[0]?.data).toMatchObject({
      model: 'deepseek-v4-pro',
      reasoningEffort: 'off',
      maxTokens: 1000,
    })
  })

  it('logs a new request/header only when the model settings change', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    mock.enqueue(reply.text('one'), reply.text('two'), reply.text('three'))
    agent.followup('first')
    await agent.whenIdle()
    agent.followup('second')
    await agent.whenIdle()
    agent.options = { ...agent.options, model: 'deepseek-v4-pro' }
    agent.followup('third')
    await agent.whenIdle()
    const headers = ofType(agent, 'request/header').map((e) => ({ reason: e.data.reason, model: e.data.model }))
    expect(headers).toEqual([
      { reason: 'initial', model: 'deepseek-v4-flash' },
      { reason: 'change', model: 'deepseek-v4-pro' },
    ])
  })

  it('ends a turn that reaches maxStepsPerTurn with an error', async () => {
    const { mock, createAgent, probe } = await setup({ loop: { maxStepsPerTurn: 2 } })
    const agent = await createAgent()
    probe.autoRelease = true
    mock.setFallback(reply.toolCalls([{ name: 'probe', arguments: { id: 'again' } }]))
    agent.followup('loop forever')
    await agent.whenIdle()
    expect(mock.requests).toHaveLength(2)
    expect(lastTurnEnd(agent).data).toMatchObject({
      turn: 1,
      reason: 'error',
      error: { code: 'INTERNAL', message: expect.stringContaining('maxStepsPerTurn') },
    })
  })
})

describe('what the model sees', () => {
  it('logs the system prompt once, and replaces it (not adds) when it changes between turns', async () => {
    const { root, mock, createAgent, probe } = await setup()
    const agent = await createAgent()
    probe.autoRelease = true
    mock.enqueue(
      reply.toolCalls([{ name: 'probe', arguments: { id: 'a' } }]),
      reply.text('one'),
      reply.text('two'),
      reply.text('three'),
    )
    agent.followup('first')
    await agent.whenIdle()
    const [original] = ofType(agent, 'system/message')
    expect(ofType(agent, 'system/message')).toHaveLength(1)
    expect(original?.data.message.content).toEqual([{ type: 'text', text: wireMessages(mock.requests[0])[0].content }])

    const extra = root.plugin({
      name: 'extra-prompt',
      inject: ['systemPrompt'],
      apply(ctx: Context) {
        ctx.systemPrompt.section(ctx, { name: 'test:extra', order: 300, text: 'Extra rule.' })
      },
    })
    await extra
    agent.followup('second')
    await agent.whenIdle()
    const changed = ofType(agent, 'system/message')
    expect(changed).toHaveLength(2)
    expect(changed[1]?.replaces).toEqual([original?.seq])
    expect(textOf(changed[1]?.data.message ?? { content: [] })).toMatch(/\n\nExtra rule\.$/)
    const wire = wireMessages(mock.requests[2])
    expect(wire.filter((m) => m.role === 'system')).toHaveLength(1)
    expect(wire[0]).toEqual({ role: 'system', content: textOf(changed[1]?.data.message ?? { content: [] }) })
    expect(agent.session.deriveMessages().filter((m) => m.role === 'system')).toHaveLength(1)

    await extra.dispose()
    agent.followup('third')
    await agent.whenIdle()
    const restored = ofType(agent, 'system/message')
    expect(restored).toHaveLength(3)
    expect(restored[2]?.replaces).toEqual([changed[1]?.seq])
    expect(ofType(agent, 'system/prompt-changed').map((e) => e.data)).toEqual([
      { changes: [{ section: 'test:extra', reason: 'section added' }] },
      { changes: [{ section: 'test:extra', reason: 'section removed' }] },
    ])
    expect(wireMessages(mock.requests[3])[0]).toEqual(wireMessages(mock.requests[0])[0])
    expect(wireMessages(mock.requests[3]).filter((m) => m.role === 'system')).toHaveLength(1)
  })

  it('sends append-only history: each request starts with the previous one, within a turn and across turns', async () => {
    const { mock, createAgent, probe } = await setup()
    const agent = await createAgent()
    probe.autoRelease = true
    mock.enqueue(
      reply.toolCalls(
        [
          { name: 'probe', arguments: { id: 'a' } },
          { name: 'bash', arguments: { command: 'echo from-bash', description: 'Print a marker' } },
        ],
        { reasoning: 'Look around first.' },
      ),
      reply.text('All good.', { reasoning: 'Done looking.' }),
      reply.text('Still good.'),
    )
    agent.followup('check')
    await agent.whenIdle()
    agent.followup('again')
    await agent.whenIdle()

    expect(mock.requests).toHaveLength(3)
    const wires = mock.requests.map((r) => wireMessages(r))
    for (let i = 1; i < wires.length; i++) {
      const [before, after] = [wires[i - 1] ?? [], wires[i] ?? []]
      expect(after.length).toBeGreaterThan(before.length)
      expect(after.slice(0, before.length)).toEqual(before)
    }
    expect(wires[1]?.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool'])
    expect(wires[1]?.[4].content).toContain('from-bash')
    expect(wires[2]?.map((m) => m.role).slice(5)).toEqual(['assistant', 'user'])
    expect(ofType(agent, 'request/header').map((e) => e.data.reason)).toEqual(['initial'])
    expect(ofType(agent, 'system/message')).toHaveLength(1)
  })
})

describe('lifecycle', () => {
  it('ctx.agents.dispose during a running turn stops it and closes the session', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    const closed: unknown[] = []
    root.on('session/closed', async (session) => void closed.push(session))
    const disposed: Agent[] = []
    root.on('agent/disposed', (from) => void disposed.push(from))
    mock.enqueue(reply.stall(1))
    agent.followup('hi')
    await mock.waitForRequests(1)
    await root.agents.dispose(agent)

    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'aborted', cause: 'shutdown' })
    expect(agent.status).toBe('idle')
    expect(root.agents.get(agent.id)).toBeUndefined()
    expect(root.sessions.get(agent.id)).toBeUndefined()
    expect(closed).toEqual([agent.session])
    expect(disposed).toEqual([agent])
    expect(() => agent.followup('more')).toThrow(/stopped/)
  })

  it('resumes a stored session: turn numbers and history continue, the header is logged as resume', async () => {
    const { root, mock, createAgent } = await setup({ persistence: true })
    const first = await createAgent()
    mock.enqueue(reply.text('First answer.'))
    first.followup('first')
    await first.whenIdle()
    await root.agents.dispose(first)

    const { agent, problems } = await root.agents.resume(first.id)
    expect(problems).toEqual([])
    expect(agent).not.toBe(first)
    const resumedAt = agent.session.seedLength
    mock.enqueue(reply.text('Second answer.'))
    agent.followup('second')
    await agent.whenIdle()

    const fresh = agent.session.events.slice(resumedAt)
    expect(typesOf(fresh)).toEqual([
      'session/end-seed',
      'turn/start',
      'step/start',
      'user/message',
      'request/header',
      'assistant/message',
      'step/end',
      'turn/end',
    ])
    expect(ofType(agent, 'request/header').at(-1)?.data.reason).toBe('resume')
    expect(lastTurnEnd(agent).data).toEqual({ turn: 2, reason: 'completed' })
    const [before, after] = [wireMessages(mock.requests[0]), wireMessages(mock.requests[1])]
    expect(after.slice(0, before.length)).toEqual(before)
    expect(after.slice(before.length)).toEqual([
      { role: 'assistant', content: 'First answer.' },
      { role: 'user', content: 'second' },
    ])
  })

  it('the agent factory goes away with the agent-loop plugin', async () => {
    const { root, loop, createAgent } = await setup()
    await loop.dispose()
    const attempt = await createAgent().then(
      () => 'an agent was created',
      (error: unknown) => String(error),
    )
    expect(attempt).toMatch(/no agent driver is loaded/)
    const again = root.plugin(loopPlugin, { maxParallelToolCalls: 10, maxStepsPerTurn: 200 })
    await again
    const agent = await createAgent()
    expect(agent.status).toBe('idle')
  })

  it('whenIdle resolves at once for an agent with nothing to do', async () => {
    const { createAgent } = await setup()
    const agent = await createAgent()
    await agent.whenIdle()
    expect(agent.status).toBe('idle')
    expect(agent.session.events).toHaveLength(0)
  })

  it('a followup sent while a turn runs waits for it to end and gets its own turn', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    mock.enqueue(reply.text('One.'), reply.text('Two.'))
    const ended = whenLogged(root, agent, 'assistant/message')
    agent.followup('one')
    await ended
    agent.followup('two')
    await agent.whenIdle()
    expect(ofType(agent, 'turn/end').map((e) => e.data)).toEqual([
      { turn: 1, reason: 'completed' },
      { turn: 2, reason: 'completed' },
    ])
  })
})
