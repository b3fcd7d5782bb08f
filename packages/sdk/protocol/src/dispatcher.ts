import type { z } from 'zod'
import { ErrorCodes, PROTOCOL_VERSION, RpcError } from './codes.ts'
import type { RequestContext } from './peer.ts'
import { ClientMethods } from './schemas.ts'
import type { ClientMethod, ResultOf } from './types.ts'
import { invalidField, parseParams } from './validate.ts'

/** A client method's params after its schema parsed them. */
export type ParsedParams<M extends ClientMethod> = z.output<(typeof ClientMethods)[M]['params']>

/** A server's handler of every client method. */
export type MethodHandlers = {
  [M in ClientMethod]: (params: ParsedParams<M>, request?: RequestContext) => Promise<ResultOf<M>>
}

/**
 * The protocol's rules for the client's requests, on the server side: an
 * unknown method is -32601; before `initialize` has been answered only
 * `initialize` and `shutdown` are taken (-32003), and `initialize` once, for
 * this protocol's version; once `stopping` only
 * `shutdown` (-32005). Params are parsed with the method's schema (-32602
 * naming the field), and a handler's failure goes through `mapError` (say, a
 * service error to its code). The requests being handled, but `shutdown`, are
 * kept so that stopping can wait for them (`settled`).
 */
export class MethodDispatcher {
  /** Set once `initialize` has been answered. */
  initialized = false
  /** Set when an `initialize` passed the checks and its handler runs. */
  private initializing = false
  /** Set when the server stops taking work. */
  stopping = false
  private readonly inflight = new Set<Promise<unknown>>()

  constructor(
    private readonly handlers: MethodHandlers,
    private readonly mapError: (method: ClientMethod, error: unknown) => unknown = (_, error) => error,
  ) {}

  dispatch(method: string, params: unknown, request?: RequestContext): Promise<unknown> {
    if (!Object.hasOwn(ClientMethods, method))
      return Promise.reject(new RpcError(ErrorCodes.MethodNotFound, `unknown method: ${method}`))
    const name = method as ClientMethod
    if (this.stopping && name !== 'shutdown')
      return Promise.reject(new RpcError(ErrorCodes.ShuttingDown, 'the server is shutting down'))
    if (!this.initialized && name !== 'initialize' && name !== 'shutdown')
      return Promise.reject(new RpcError(ErrorCodes.NotInitialized, `${name}: call initialize first`))
    const handler = this.handlers[name] as (p: unknown, r?: RequestContext) => Promise<unknown>
    const run = (async () => {
      const parsed = parseParams(name, ClientMethods[name].params, params)
      if (name === 'initialize') this.beginInitialize(parsed as ParsedParams<'initialize'>)
      return handler(parsed, request)
    })().catch((error: unknown) => {
      throw this.mapError(name, error)
    })
    if (name === 'shutdown') return run
    this.inflight.add(run)
    return run.finally(() => this.inflight.delete(run))
  }

  /** `initialize` is taken once (-32004), and only for this protocol's version (-32602 naming `protocolVersion`). */
  private beginInitialize(params: ParsedParams<'initialize'>): void {
    if (this.initialized || this.initializing)
      throw new RpcError(ErrorCodes.AlreadyInitialized, 'initialize was already called')
    const version = params.protocolVersion
    if (version !== PROTOCOL_VERSION)
      throw invalidField(
        'initialize',
        'protocolVersion',
        `this server speaks protocol version ${PROTOCOL_VERSION}, not ${version}`,
      )
    this.initializing = true
  }

  /** Resolves when every request being handled has answered, or after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const limit = new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))
    await Promise.race([Promise.allSettled([...this.inflight]), limit])
    clearTimeout(timer)
  }
}
