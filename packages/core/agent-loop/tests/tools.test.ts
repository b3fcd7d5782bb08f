import type { Agent } from '@dsh/agent'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import {
  checkToolPairing,
  events,
  harnessPerTest,
  lastTurnEnd,
  modelCalls,
  ofType,
  textOf,
  typesOf,
  wireMessages,
} from './harness.ts'

const setup = harnessPerTest()

/** One reply that calls the probe tool once per id, in order. */
const probeCalls = (...ids: string[]) => reply.toolCalls(ids.map((id) => ({ name: 'probe', arguments: { id } })))
/** What the probe tool answers for each of `ids`. */
const finished = (...ids: string[]) => ids.map((id) => `probe ${id} finished`)
/** The text of each logged tool result, in order. */
const resultTexts = (agent: Agent) => ofType(agent, 'tool/result').map((r) => textOf(r.data.message))

describe('cancel during a tool', () => {
  it('records CANCELLED for the running call and ABORTED_BEFORE_DISPATCH for the next one', async () => {
    const { mock, createAgent, hang, workspace } = await setup()
    await writeFile(join(workspace, 'notes.txt'), 'some notes\n')
    const agent = await createAgent()
    mock.enqueue(
      reply.toolCalls([
        { name: 'hang', arguments: {} },
        { name: 'read', arguments: { file_path: 'notes.txt' } },
      ]),
    )
    agent.followup('go')
    await hang.entered.promise
    agent.cancel()
    await agent.whenIdle()

    expect(typesOf(events(agent)).slice(6)).toEqual([
      'assistant/message',
      'tool/call',
      'tool/result',
      'tool/result',
      'step/end',
      'turn/end',
    ])
    const [hung, read] = ofType(agent, 'tool/result')
    expect(hung?.data).toMatchObject({ name: 'hang', error: { code: 'CANCELLED' } })
    expect(hung?.data.message.content[0]).toMatchObject({ type: 'tool-result', isError: true })
    expect(read?.data).toMatchObject({ name: 'read', error: { code: 'ABORTED_BEFORE_DISPATCH' } })
    expect(read?.data.message.content[0]).toMatchObject({ type: 'tool-result', isError: true })
    expect(ofType(agent, 'tool/call').map((c) => c.data.name)).toEqual(['hang'])
    expect(hang.reason).toBe('user')
    checkToolPairing(agent)
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'aborted', cause: 'user' })
    expect(agent.status).toBe('idle')
    expect(mock.requests).toHaveLength(1)

    // The history stays well formed: every call the model made is answered before the next user message.
    mock.enqueue(reply.text('Understood.'))
    agent.followup('never mind')
    await agent.whenIdle()
    const wire = wireMessages(mock.requests[1])
    const ids = modelCalls(agent).map((c) => c.id)
    expect(wire.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'user'])
    expect(wire[2].tool_calls.map((c: { id: string }) => c.id)).toEqual(ids)
    expect([wire[3].tool_call_id, wire[4].tool_call_id]).toEqual(ids)
    expect(wire[3].content).toMatch(/^Error: the tool call was cancelled/)
    expect(wire[4].content).toMatch(/^Error: the turn was cancelled before this tool call ran/)
  })
})

describe('tool errors go back to the model', () => {
  it('malformed JSON, an unknown tool and invalid arguments each become an error result; the turn goes on', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    mock.enqueue(
      reply.toolCalls([
        { name: 'read', arguments: '{"file_path": "notes.txt"' },
        { name: 'nope', arguments: {} },
        { name: 'read', arguments: { offset: 0 } },
      ]),
      reply.text('I will fix my calls.'),
    )
    agent.followup('go')
    await agent.whenIdle()

    expect(ofType(agent, 'tool/call').map((c) => [c.data.name, c.data.arguments])).toEqual([
      ['read', '{"file_path": "notes.txt"'],
      ['nope', '{}'],
      ['read', '{"offset":0}'],
    ])
    expect(ofType(agent, 'tool/result').map((r) => r.data.error?.code)).toEqual([
      'INVALID_JSON',
      'UNKNOWN_TOOL',
      'INVALID_ARGUMENTS',
    ])
    checkToolPairing(agent)
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
    expect(mock.requests).toHaveLength(2)
    const tools = wireMessages(mock.requests[1]).filter((m) => m.role === 'tool')
    expect(tools).toHaveLength(3)
    expect(tools[0].content).toMatch(/^Error: the arguments for tool "read" are not valid JSON/)
    expect(tools[1].content).toMatch(
      /^Error: there is no tool named "nope"\. Available tools: bash, edit, glob, grep, hang, ls, probe, read, write\./,
    )
    expect(tools[2].content).toMatch(/^Error: invalid arguments for tool "read":\n {2}- file_path: /)
    expect(tools[2].content).toMatch(/\n {2}- offset: /)
  })
})

describe('parallel tool calls', () => {
  it('dispatches concurrency-safe reads together and logs their results in the model order', async () => {
    const { mock, createAgent, workspace } = await setup()
    for (const [name, text] of [
      ['a.txt', 'alpha'],
      ['b.txt', 'beta'],
      ['c.txt', 'gamma'],
    ]) {
      await writeFile(join(workspace, name as string), `${text}\n`)
    }
    const agent = await createAgent()
    mock.enqueue(
      reply.toolCalls([
        { name: 'read', arguments: { file_path: 'a.txt' } },
        { name: 'read', arguments: { file_path: 'b.txt' } },
        { name: 'read', arguments: { file_path: 'c.txt' } },
      ]),
      reply.text('Read all three.'),
    )
    agent.followup('read them')
    await agent.whenIdle()

    expect(typesOf(events(agent)).slice(6, 14)).toEqual([
      'assistant/message',
      'tool/call',
      'tool/call',
      'tool/call',
      'tool/result',
      'tool/result',
      'tool/result',
      'step/end',
    ])
    const ids = modelCalls(agent).map((c) => c.id)
    expect(ofType(agent, 'tool/result').map((r) => r.data.callId)).toEqual(ids)
    expect(ofType(agent, 'tool/result').map((r) => textOf(r.data.message).trim())).toEqual([
      '1\talpha',
      '1\tbeta',
      '1\tgamma',
    ])
  })

  it('runs at most maxParallelToolCalls at once and still logs results in the model order', async () => {
    const { mock, createAgent, probe } = await setup({ loop: { maxParallelToolCalls: 2 } })
    const agent = await createAgent()
    mock.enqueue(probeCalls('p1', 'p2', 'p3'), reply.text('done'))
    agent.followup('go')

    await probe.whenStarted(2)
    expect(probe.started).toEqual([
      { id: 'p1', othersRunning: 0 },
      { id: 'p2', othersRunning: 1 },
    ])
    expect(ofType(agent, 'tool/call')).toHaveLength(2)
    probe.release('p2')
    await probe.whenStarted(3)
    expect(probe.started[2]).toEqual({ id: 'p3', othersRunning: 1 })
    // p2 is done, but its result waits for p1's: results are committed in the model order.
    expect(ofType(agent, 'tool/result')).toHaveLength(0)
    probe.release('p3', 'p1')
    await agent.whenIdle()

    expect(probe.maxRunning).toBe(2)
    expect(resultTexts(agent)).toEqual(finished('p1', 'p2', 'p3'))
    expect(ofType(agent, 'tool/result').map((r) => r.data.callId)).toEqual(modelCalls(agent).map((c) => c.id))
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
  })

  it('runs an exclusive call alone: after the calls before it, before the calls after it', async () => {
    const { mock, createAgent, probe } = await setup()
    const agent = await createAgent()
    mock.enqueue(probeCalls('a', 'b', 'x1', 'c'), reply.text('done'))
    agent.followup('go')

    await probe.whenStarted(2)
    expect(probe.started.map((s) => s.id)).toEqual(['a', 'b'])
    probe.release('a', 'b')
    await probe.whenStarted(3)
    expect(probe.started[2]).toEqual({ id: 'x1', othersRunning: 0 })
    expect(probe.running).toBe(1)
    probe.release('x1')
    await probe.whenStarted(4)
    expect(probe.started[3]).toEqual({ id: 'c', othersRunning: 0 })
    probe.release('c')
    await agent.whenIdle()

    expect(resultTexts(agent)).toEqual(finished('a', 'b', 'x1', 'c'))
    checkToolPairing(agent)
  })
})

describe('max-tokens', () => {
  it('drops the tool calls of a reply cut by the token limit and ends the turn with max-tokens', async () => {
    const { mock, createAgent, probe } = await setup()
    const agent = await createAgent()
    mock.enqueue(
      reply.toolCalls([{ name: 'probe', arguments: { id: 'a' } }], {
        content: 'Let me look at',
        finishReason: 'length',
      }),
    )
    agent.followup('go')
    await agent.whenIdle()

    const [message] = ofType(agent, 'assistant/message')
    expect(message?.data.finish).toBe('max-tokens')
    expect(message?.data.message.content).toEqual([{ type: 'text', text: 'Let me look at' }])
    expect(ofType(agent, 'tool/call')).toHaveLength(0)
    expect(ofType(agent, 'tool/result')).toHaveLength(0)
    expect(probe.started).toHaveLength(0)
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'max-tokens' })
    expect(mock.requests).toHaveLength(1)
  })

  it('reports max-tokens for the turn even when a later step of it completes', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    let steered = false
    root.on('agent/turn-stopping', async (from) => {
      if (steered) return
      steered = true
      from.steer('go on')
    })
    mock.enqueue(reply.text('Cut off in the mid', { finishReason: 'length' }), reply.text('dle of a word.'))
    agent.followup('go')
    await agent.whenIdle()
    expect(ofType(agent, 'assistant/message').map((m) => m.data.finish)).toEqual(['max-tokens', 'stop'])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'max-tokens' })
  })

  it('reports max-tokens for the turn when agent/pre-step rejects the step after it', async () => {
    const { root, mock, createAgent } = await setup()
    const agent = await createAgent()
    root.on('agent/turn-stopping', async (from) => from.steer('go on'))
    root.on('agent/pre-step', async (_agent, step, next) => (step.step === 2 ? { kind: 'reject' } : next()))
    mock.enqueue(reply.text('Cut off in the mid', { finishReason: 'length' }))
    agent.followup('go')
    await agent.whenIdle()
    expect(typesOf(events(agent)).slice(-3)).toEqual(['assistant/message', 'step/end', 'turn/end'])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'max-tokens' })
  })
})

describe('a step that fails mid-tools', () => {
  /** An agent whose model called the probe tool once per id, after `count` of those calls started. */
  async function probesStarted(ids: string[], count: number) {
    const { mock, createAgent, probe } = await setup()
    const agent = await createAgent()
    mock.enqueue(probeCalls(...ids))
    agent.followup('go')
    await probe.whenStarted(count)
    return { agent, probe }
  }

  it('waits for the calls already running, answers every call once, and ends the turn with an error', async () => {
    const { agent, probe } = await probesStarted(['nan1', 'p2'], 2)
    probe.release('nan1', 'p2')
    await agent.whenIdle()

    expect(probe.running).toBe(0)
    expect(typesOf(events(agent)).slice(6)).toEqual([
      'assistant/message',
      'tool/call',
      'tool/call',
      'tool/result',
      'tool/result',
      'step/end',
      'turn/end',
    ])
    expect(ofType(agent, 'tool/result').map((r) => r.data.error?.code)).toEqual(['INTERNAL_ERROR', 'INTERNAL_ERROR'])
    checkToolPairing(agent)
    expect(lastTurnEnd(agent).data).toMatchObject({
      turn: 1,
      reason: 'error',
      error: { code: 'INTERNAL', message: expect.stringContaining('NaN') },
    })
    expect(agent.status).toBe('idle')
  })

  it('starts no further call once the log refused a result', async () => {
    const { agent, probe } = await probesStarted(['nan1', 'x2'], 1)
    probe.release('nan1')
    await agent.whenIdle()

    expect(probe.started.map((s) => s.id)).toEqual(['nan1'])
    expect(ofType(agent, 'tool/call').map((c) => c.data.arguments)).toEqual(['{"id":"nan1"}'])
    expect(ofType(agent, 'tool/result').map((r) => r.data.error?.code)).toEqual(['INTERNAL_ERROR', 'INTERNAL_ERROR'])
    checkToolPairing(agent)
    expect(lastTurnEnd(agent).data).toMatchObject({ turn: 1, reason: 'error', error: { code: 'INTERNAL' } })
  })
})
