import { describe, expect, it } from 'vitest'
import { answeredBeforeEnd } from '../src/index.ts'

type Msg = { jsonrpc: '2.0'; id?: number; method?: string; result?: unknown }

/** A connection whose input holds `incoming` and ends; what is written is collected. */
function connection(incoming: Msg[]) {
  const written: Msg[] = []
  const readable = new ReadableStream<Msg>({
    start(controller) {
      for (const message of incoming) controller.enqueue(message)
      controller.close()
    },
  })
  const writable = new WritableStream<Msg>({ write: (message) => void written.push(message) })
  return { stream: { readable, writable }, written }
}

describe('answeredBeforeEnd', () => {
  it('holds the end of input until every request read was answered, after telling the owner', async () => {
    const { stream, written } = connection([
      { jsonrpc: '2.0', id: 1, method: 'slow' },
      { jsonrpc: '2.0', method: 'note' },
    ])
    const order: string[] = []
    const wrapped = answeredBeforeEnd(stream, {
      timeoutMs: 60_000,
      onEnd: () => order.push('end seen'),
      onTimeout: () => order.push('timed out'),
    })
    const reader = wrapped.readable.getReader()
    expect((await reader.read()).value).toMatchObject({ id: 1 })
    expect((await reader.read()).value).toMatchObject({ method: 'note' })
    let done = false
    const end = reader.read().then((r) => {
      done = r.done === true
      order.push('input ended')
    })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(done).toBe(false)
    const writer = wrapped.writable.getWriter()
    await writer.write({ jsonrpc: '2.0', id: 1, result: {} })
    await end
    expect(done).toBe(true)
    expect(order).toEqual(['end seen', 'input ended'])
    expect(written).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }])
  })

  it('ends anyway after the timeout and reports how many requests went unanswered', async () => {
    const { stream } = connection([
      { jsonrpc: '2.0', id: 1, method: 'a' },
      { jsonrpc: '2.0', id: 2, method: 'b' },
    ])
    let unanswered = 0
    const wrapped = answeredBeforeEnd(stream, { timeoutMs: 1, onEnd: () => {}, onTimeout: (n) => (unanswered = n) })
    const reader = wrapped.readable.getReader()
    while (!(await reader.read()).done);
    expect(unanswered).toBe(2)
  })
})
