// The mock model every replay file serves its recorded replies from.
// snapshots/ is not a workspace package, so the helpers are imported by path.
import { afterAll, beforeAll } from 'vitest'
import { type MockLlm, type MockReply, startMockLlm } from '../packages/test-support/llm-mock/src/index.ts'

export interface ReplayMock {
  /** The running mock; read it inside tests only. */
  readonly mock: MockLlm
  /** Empties the mock (requests and queue) and queues `replies`. */
  serve(replies: MockReply[]): void
  /** The environment that points a dsh child at the mock. */
  env(): Record<string, string>
}

/** Starts the mock before the file's tests and closes it after them. */
export function useReplayMock(): ReplayMock {
  let running: MockLlm | undefined
  beforeAll(async () => {
    running = await startMockLlm()
  })
  afterAll(() => running?.close())
  const current = (): MockLlm => {
    if (!running) throw new Error('the replay mock is read before its beforeAll hook ran')
    return running
  }
  return {
    get mock() {
      return current()
    },
    serve(replies) {
      current().reset()
      current().enqueue(...replies)
    },
    env: () => ({ DEEPSEEK_BASE_URL: current().url, DEEPSEEK_API_KEY: 'sk-replay' }),
  }
}
