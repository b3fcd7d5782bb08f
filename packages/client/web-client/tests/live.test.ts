/// <reference types="node" />
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
// The test-support packages and `ws` (Node 20 has no global WebSocket) come by path:
// this browser package has no Node dependencies of its own.
import { type MockLlm, reply, startMockLlm } from '@dsh/llm-mock'
import { type DshProcess, startDshWeb, tempDir } from '@dsh/testkit'
import NodeWebSocket from 'ws'
import { ApiError, type Delta, DshApi, LiveConnection, type SessionEvent } from '../src/index.ts'

async function until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const WORDS = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ')

describe('@dsh/web-client against dsh web', { timeout: 90_000 }, () => {
  let mock: MockLlm
  let dsh: DshProcess
  let origin: string
  let dispose: () => Promise<void>

  beforeAll(async () => {
    mock = await startMockLlm()
  })
  afterAll(() => mock.close())

  beforeEach(async () => {
    mock.reset()
    const tmp = await tempDir('dsh-web-client-')
    dispose = tmp.dispose
    const work = path.join(tmp.dir, 'work')
    await mkdir(work)
    ;({ dsh, origin } = await startDshWeb({
      home: path.join(tmp.dir, 'home'),
      cwd: work,
      env: { DEEPSEEK_BASE_URL: mock.url, DEEPSEEK_API_KEY: 'sk-test' },
    }))
  }, 60_000)
  afterEach(async () => {
    await dsh.kill()
    await dispose()
  })

  it('reports API failures as ApiError with the server code', async () => {
    const api = new DshApi({ baseUrl: origin })
    const missing = await api.getSession('session-nope' as never).catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(ApiError)
    expect(missing).toMatchObject({ status: 404, code: 'unknown-session' })
    const { sessionId } = await api.createSession()
    const bad = await api.updateSession(sessionId, { permissionPreset: 'everything' }).catch((e: unknown) => e)
    expect(bad).toMatchObject({ status: 400, code: 'bad-request' })
    expect((bad as Error).message).toContain('permissionPreset')
    const down = await new DshApi({ baseUrl: 'http://127.0.0.1:9' }).info().catch((e: unknown) => e)
    expect(down).toMatchObject({ code: 'network' })
  })

  it('resumes from the last seq after the socket drops mid-stream: every event once, in order', async () => {
    mock.setFallback((request) =>
      request.body?.tools?.length ? reply.text(WORDS, { delayMs: 60 }) : reply.text('title'),
    )
    const api = new DshApi({ baseUrl: origin })
    const { sessionId } = await api.createSession()
    const live = new LiveConnection({
      url: `${origin.replace('http', 'ws')}/api/ws`,
      WebSocket: NodeWebSocket as unknown as typeof WebSocket,
      initialDelayMs: 50,
    })
    const events: SessionEvent[] = []
    const deltas: Delta[] = []
    let resumed = 0
    live.subscribe(sessionId, undefined, {
      event: (e) => events.push(e),
      delta: (d) => deltas.push(d),
      resumed: () => resumed++,
    })
    await until(() => live.state === 'open', 'the socket to open')
    await api.sendMessage(sessionId, { text: 'stream please' })
    await until(() => deltas.length >= 3, 'the first deltas')
    live.drop()
    await until(() => resumed === 1, 'the reconnect')
    await until(() => events.some((e) => e.type === 'turn/end'), 'the end of the turn')
    live.close()

    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    const answer = events.find((e) => e.type === 'assistant/message') as SessionEvent<'assistant/message'>
    expect(answer.data.message.content).toEqual([{ type: 'text', text: WORDS }])
    expect(events.filter((e) => e.type === 'user/message')).toHaveLength(1)
  })
})
