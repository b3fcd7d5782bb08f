import type { LlmFailure } from '@dsh/llm'
import { reply } from '@dsh/llm-mock'
import { STEP_OPENING } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import {
  events,
  type Harness,
  harnessPerTest,
  lastTurnEnd,
  ofType,
  typesOf,
  whenLogged,
  wireMessages,
} from './harness.ts'

const setup = harnessPerTest()

/** What a step logs when its first model call fails, is retried, and the second one answers. */
const RETRIED_ONCE = [...STEP_OPENING, 'assistant/attempt', 'llm/retry', 'assistant/message', 'step/end', 'turn/end']

/** Sends the user's message and waits for the turn it starts to end. */
async function sayHi(agent: { followup(text: string): void; whenIdle(): Promise<unknown> }) {
  agent.followup('hi')
  await agent.whenIdle()
}

/** What `agent/request-error` tells its listeners, watched ahead of the retry plugin's listener. */
function requestErrors(harness: Harness): { attempt: number; code: string; outputSeen: boolean }[] {
  const seen: { attempt: number; code: string; outputSeen: boolean }[] = []
  harness.root.on(
    'agent/request-error',
    async (_agent, info, next) => {
      seen.push({ attempt: info.attempt, code: info.failure.code, outputSeen: info.outputSeen })
      return next()
    },
    { prepend: true },
  )
  return seen
}

describe('retries within the step', () => {
  it('retries a 429 with Retry-After 0, then succeeds', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    mock.enqueue(reply.error(429, { retryAfter: 0 }), reply.text('Made it.'))
    await sayHi(agent)

    expect(typesOf(events(agent))).toEqual(RETRIED_ONCE)
    expect(ofType(agent, 'assistant/attempt')[0]?.data).toMatchObject({
      turn: 1,
      step: 1,
      attempt: 1,
      error: { code: 'RATE_LIMIT', status: 429, retryAfterMs: 0 },
    })
    expect(ofType(agent, 'llm/retry')[0]?.data).toMatchObject({
      turn: 1,
      step: 1,
      attempt: 1,
      delayMs: 0,
      error: { code: 'RATE_LIMIT' },
    })
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
    expect(mock.requests).toHaveLength(2)
    // A retry sends the same request again.
    expect(wireMessages(mock.requests[1])).toEqual(wireMessages(mock.requests[0]))
  })

  it('retries a stream cut mid-reply (TRANSPORT); only the complete reply is logged as the message', async () => {
    const harness = await setup()
    const seen = requestErrors(harness)
    const agent = await harness.createAgent()
    harness.mock.enqueue(reply.cut(3, reply.text('This reply breaks off in the middle.')), reply.text('Whole reply.'))
    await sayHi(agent)

    expect(typesOf(events(agent))).toEqual(RETRIED_ONCE)
    expect(ofType(agent, 'assistant/attempt')[0]?.data.error.code).toBe('TRANSPORT')
    expect(ofType(agent, 'llm/retry')[0]?.data).toMatchObject({ attempt: 1, delayMs: 1, error: { code: 'TRANSPORT' } })
    expect(seen).toEqual([{ attempt: 1, code: 'TRANSPORT', outputSeen: true }])
    expect(ofType(agent, 'assistant/message').map((m) => m.data.message.content)).toEqual([
      [{ type: 'text', text: 'Whole reply.' }],
    ])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
  })

  it('retries an empty response (EMPTY_RESPONSE)', async () => {
    const { mock, createAgent } = await setup()
    const agent = await createAgent()
    mock.enqueue(reply.empty(), reply.text('Now with words.'))
    await sayHi(agent)

    expect(typesOf(events(agent))).toEqual(RETRIED_ONCE)
    expect(ofType(agent, 'assistant/attempt')[0]?.data).toMatchObject({
      attempt: 1,
      error: { code: 'EMPTY_RESPONSE' },
      usage: { outputTokens: 0 },
    })
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'completed' })
    expect(mock.requests).toHaveLength(2)
  })

  it('does not retry a 401: the turn ends with AUTH', async () => {
    const harness = await setup()
    const seen = requestErrors(harness)
    const agent = await harness.createAgent()
    const outcomes: { reason: string; error?: LlmFailure }[] = []
    harness.root.on('agent/turn-end', (_agent, outcome) => void outcomes.push(outcome))
    harness.mock.enqueue(reply.error(401))
    await sayHi(agent)

    expect(typesOf(events(agent))).toEqual([...STEP_OPENING, 'assistant/attempt', 'step/end', 'turn/end'])
    expect(ofType(agent, 'assistant/attempt')[0]?.data.error).toMatchObject({ code: 'AUTH', status: 401 })
    expect(lastTurnEnd(agent).data).toMatchObject({
      turn: 1,
      reason: 'error',
      error: { code: 'AUTH', status: 401, message: expect.stringContaining('DEEPSEEK_API_KEY') },
    })
    expect(outcomes).toMatchObject([{ reason: 'error', error: { code: 'AUTH' } }])
    expect(seen).toEqual([{ attempt: 1, code: 'AUTH', outputSeen: false }])
    expect(harness.mock.requests).toHaveLength(1)
  })

  it('ends the turn with the failure code once the retries are used up', async () => {
    const { mock, createAgent } = await setup({ retry: { maxRetries: 2 } })
    const agent = await createAgent()
    mock.enqueue(reply.error(503), reply.error(503), reply.error(503))
    await sayHi(agent)

    expect(typesOf(events(agent))).toEqual([
      ...STEP_OPENING,
      'assistant/attempt',
      'llm/retry',
      'assistant/attempt',
      'llm/retry',
      'assistant/attempt',
      'step/end',
      'turn/end',
    ])
    expect(ofType(agent, 'assistant/attempt').map((a) => [a.data.attempt, a.data.error.code])).toEqual([
      [1, 'SERVER'],
      [2, 'SERVER'],
      [3, 'SERVER'],
    ])
    expect(ofType(agent, 'llm/retry').map((r) => [r.data.attempt, r.data.delayMs])).toEqual([
      [1, 1],
      [2, 2],
    ])
    expect(lastTurnEnd(agent).data).toMatchObject({ turn: 1, reason: 'error', error: { code: 'SERVER', status: 503 } })
    expect(mock.requests).toHaveLength(3)
  })

  it('a cancel during the backoff ends the turn aborted without another attempt', async () => {
    const { root, mock, createAgent } = await setup({ retry: { initialDelayMs: 600_000, maxDelayMs: 600_000 } })
    const agent = await createAgent()
    mock.enqueue(reply.error(503))
    const retrying = whenLogged(root, agent, 'llm/retry')
    agent.followup('hi')
    expect((await retrying).data.delayMs).toBe(600_000)
    agent.cancel()
    await agent.whenIdle()

    expect(typesOf(events(agent))).toEqual([...STEP_OPENING, 'assistant/attempt', 'llm/retry', 'step/end', 'turn/end'])
    expect(lastTurnEnd(agent).data).toEqual({ turn: 1, reason: 'aborted', cause: 'user' })
    expect(mock.requests).toHaveLength(1)
  })
})
