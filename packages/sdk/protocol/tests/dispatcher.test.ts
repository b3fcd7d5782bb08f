import { describe, expect, it } from 'vitest'
import { ErrorCodes, MethodDispatcher, type MethodHandlers, RpcError } from '../src/index.ts'

const unused = () => Promise.reject(new Error('not called in this test'))

function dispatcher(overrides: Partial<MethodHandlers> = {}) {
  const handlers = new Proxy(overrides, {
    get: (target, name: string) => target[name as keyof MethodHandlers] ?? unused,
  }) as MethodHandlers
  return new MethodDispatcher(handlers, (method, error) =>
    error instanceof Error && !(error instanceof RpcError)
      ? new RpcError(-32099, `${method}: ${error.message}`)
      : error,
  )
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: RpcError) => error.code,
  )

describe('MethodDispatcher', () => {
  it('refuses unknown methods, work before initialize and after stopping, and bad params naming the field', async () => {
    const methods = dispatcher({ 'session/cancel': async () => ({}) })
    expect(await codeOf(methods.dispatch('nope', {}))).toBe(ErrorCodes.MethodNotFound)
    expect(await codeOf(methods.dispatch('session/cancel', { sessionId: 's1' }))).toBe(ErrorCodes.NotInitialized)
    methods.initialized = true
    await expect(methods.dispatch('session/cancel', {})).rejects.toMatchObject({
      code: ErrorCodes.InvalidParams,
      data: { field: 'sessionId' },
    })
    expect(await methods.dispatch('session/cancel', { sessionId: 's1' })).toEqual({})
    methods.stopping = true
    expect(await codeOf(methods.dispatch('session/cancel', { sessionId: 's1' }))).toBe(ErrorCodes.ShuttingDown)
  })

  it("maps a handler's failure, also a synchronous one, and waits for the requests being handled", async () => {
    let finish = () => {}
    const methods = dispatcher({
      'session/close': () => {
        throw new Error('boom')
      },
      'session/cancel': () => new Promise((resolve) => (finish = () => resolve({}))),
    })
    methods.initialized = true
    await expect(methods.dispatch('session/close', { sessionId: 's1' })).rejects.toMatchObject({
      code: -32099,
      message: 'session/close: boom',
    })
    let answered = false
    void methods.dispatch('session/cancel', { sessionId: 's1' }).then(() => (answered = true))
    const settled = methods.settled(60_000).then(() => answered)
    finish()
    expect(await settled).toBe(true)
  })

  it('takes initialize once, and only for this protocol version, naming protocolVersion', async () => {
    let runs = 0
    const methods = dispatcher({
      initialize: async () => {
        runs++
        return {} as never
      },
    })
    await expect(methods.dispatch('initialize', { protocolVersion: 7 })).rejects.toMatchObject({
      code: ErrorCodes.InvalidParams,
      message: 'initialize: protocolVersion: this server speaks protocol version 1, not 7',
      data: { field: 'protocolVersion' },
    })
    await methods.dispatch('initialize', { protocolVersion: 1 })
    expect(await codeOf(methods.dispatch('initialize', { protocolVersion: 1 }))).toBe(ErrorCodes.AlreadyInitialized)
    expect(runs).toBe(1)
  })
})
