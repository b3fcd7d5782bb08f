import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import {
  ConnectionClosedError,
  ErrorCodes,
  JsonRpcPeer,
  LineSplitter,
  type PeerOptions,
  RequestTimeoutError,
  RpcError,
} from '../src/index.ts'

/** Two peers wired back to back. */
function pair(a: Partial<PeerOptions> = {}, b: Partial<PeerOptions> = {}) {
  const aToB = new PassThrough()
  const bToA = new PassThrough()
  const left = new JsonRpcPeer({ input: bToA, output: aToB, ...a })
  const right = new JsonRpcPeer({ input: aToB, output: bToA, ...b })
  return { left, right, aToB, bToA }
}

/** A peer fed raw lines; resolves the lines it writes back. */
function raw(options: Partial<PeerOptions> = {}) {
  const input = new PassThrough()
  const output = new PassThrough()
  const written: unknown[] = []
  const splitter = new LineSplitter(
    Infinity,
    (line) => written.push(JSON.parse(line)),
    () => {},
  )
  output.on('data', (chunk: Buffer) => splitter.push(chunk))
  const peer = new JsonRpcPeer({ input, output, ...options })
  const until = async (count: number) => {
    while (written.length < count) await new Promise((resolve) => setImmediate(resolve))
    return written
  }
  return { peer, input, written, until }
}

describe('JsonRpcPeer', () => {
  it('carries requests, results and notifications both ways', async () => {
    const heard: unknown[] = []
    const { left, right } = pair(
      { onNotification: (method, params) => heard.push([method, params]) },
      { onRequest: (method, params) => ({ method, echo: params }) },
    )
    expect(await left.request('ping', { n: 1 })).toEqual({ method: 'ping', echo: { n: 1 } })
    right.notify('note', { x: 2 })
    await new Promise((resolve) => setImmediate(resolve))
    expect(heard).toEqual([['note', { x: 2 }]])
  })

  it('rejects with RpcError carrying the code and data of an error answer', async () => {
    const { left } = pair(
      {},
      {
        onRequest: (method) => {
          if (method === 'bad') throw new RpcError(ErrorCodes.InvalidParams, 'x: wrong', { field: 'x' })
          throw new Error('boom')
        },
      },
    )
    await expect(left.request('bad')).rejects.toMatchObject({
      name: 'RpcError',
      code: -32602,
      message: 'x: wrong',
      data: { field: 'x' },
    })
    await expect(left.request('other')).rejects.toMatchObject({ code: -32603, message: 'boom' })
  })

  it('answers what is not a request as JSON-RPC says, and keeps reading', async () => {
    const { input, until } = raw({ onRequest: () => 'ok' })
    input.write('garbage\n')
    input.write('[]\n')
    input.write('"text"\n')
    input.write('{"id":1,"method":"m"}\n')
    input.write('{"jsonrpc":"2.0","id":2,"method":""}\n')
    input.write('{"jsonrpc":"2.0","id":true,"method":"m"}\n')
    input.write('{"jsonrpc":"2.0","id":3}\n')
    input.write('\n   \n{"jsonrpc":"2.0","id":4,"method":"m"}\r\n')
    const out = await until(8)
    expect(out).toEqual([
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32700 }) },
      {
        jsonrpc: '2.0',
        id: null,
        error: expect.objectContaining({ code: -32600, message: expect.stringContaining('batches') }),
      },
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) },
      { jsonrpc: '2.0', id: 1, error: expect.objectContaining({ code: -32600, message: '"jsonrpc" must be "2.0"' }) },
      { jsonrpc: '2.0', id: 2, error: expect.objectContaining({ code: -32600 }) },
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) },
      { jsonrpc: '2.0', id: 3, error: expect.objectContaining({ code: -32600 }) },
      { jsonrpc: '2.0', id: 4, result: 'ok' },
    ])
  })

  it('answers -32601 when it has no request handler', async () => {
    const { input, until } = raw()
    input.write('{"jsonrpc":"2.0","id":"a","method":"anything"}\n')
    expect(await until(1)).toEqual([
      { jsonrpc: '2.0', id: 'a', error: { code: -32601, message: 'unknown method: anything' } },
    ])
  })

  it('drops a line over the limit with -32600 (carrying the id its first bytes show) and reads the next one', async () => {
    const { input, until } = raw({ maxLineBytes: 64, onRequest: () => 'fine' })
    input.write(`{"jsonrpc":"2.0","id":1,"method":"m","params":"${'x'.repeat(100)}`)
    input.write(`${'y'.repeat(100)}"}\n{"jsonrpc":"2.0","id":2,"method":"m"}\n`)
    input.write(`{"jsonrpc":"2.0","method":"m","params":{"id":5,"text":"${'z'.repeat(100)}"}}\n`)
    const out = await until(3)
    expect(out).toContainEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32600, message: expect.stringContaining('longer than the limit of 64 bytes') },
    })
    expect(out).toContainEqual({ jsonrpc: '2.0', id: 2, result: 'fine' })
    expect(out).toContainEqual({ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) })
  })

  it('answers a line that is not JSON with the id its first bytes show, else null', async () => {
    const { input, until } = raw({ onRequest: () => 'fine' })
    input.write('{"jsonrpc":"2.0","id":"a1","method":"m","params":{oops}}\n')
    input.write('{"jsonrpc":"2.0","method":"m","params":{"id":3,oops}}\n')
    const out = await until(2)
    expect(out).toEqual([
      { jsonrpc: '2.0', id: 'a1', error: expect.objectContaining({ code: -32700 }) },
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32700 }) },
    ])
  })

  it('cancels a request by signal: the sender rejects, the handler’s signal aborts', async () => {
    let handlerSignal: AbortSignal | undefined
    let markStarted!: () => void
    const started = new Promise<void>((resolve) => (markStarted = resolve))
    const { left } = pair(
      {},
      {
        onRequest: (_m, _p, context) => {
          handlerSignal = context.signal
          markStarted()
          return new Promise(() => {})
        },
      },
    )
    const controller = new AbortController()
    const pending = left.request('slow', {}, { signal: controller.signal })
    await started
    controller.abort()
    await expect(pending).rejects.toMatchObject({ code: ErrorCodes.RequestCancelled })
    while (!handlerSignal?.aborted) await new Promise((resolve) => setImmediate(resolve))
    expect(handlerSignal.aborted).toBe(true)
  })

  it('gives up after timeoutMs', async () => {
    const { left } = pair({}, { onRequest: () => new Promise(() => {}) })
    await expect(left.request('slow', {}, { timeoutMs: 10 })).rejects.toBeInstanceOf(RequestTimeoutError)
  })

  it('rejects pending and later requests once closed, and closes by itself when input ends', async () => {
    const { left, bToA } = pair({}, { onRequest: () => new Promise(() => {}) })
    const pending = left.request('never')
    bToA.end()
    await expect(pending).rejects.toBeInstanceOf(ConnectionClosedError)
    expect(left.closed).toBe(true)
    await expect(left.request('after')).rejects.toBeInstanceOf(ConnectionClosedError)
  })

  it('leaves closing to its owner when onInputEnd is given', async () => {
    let ended = false
    const { left, bToA } = pair({ onInputEnd: () => (ended = true) })
    bToA.end()
    while (!ended) await new Promise((resolve) => setImmediate(resolve))
    expect(left.closed).toBe(false)
  })
})

describe('LineSplitter', () => {
  it('joins chunks into lines, across split UTF-8 characters, and keeps a last line without newline', () => {
    const lines: string[] = []
    const splitter = new LineSplitter(
      1000,
      (line) => lines.push(line),
      () => {},
    )
    const bytes = Buffer.from('héllo\nwörld\r\nlast')
    for (let i = 0; i < bytes.length; i++) splitter.push(bytes.subarray(i, i + 1))
    splitter.end()
    expect(lines).toEqual(['héllo', 'wörld', 'last'])
  })
})
