import type { z } from 'zod'
import { ConnectionClosedError, ErrorCodes, RpcError } from './codes.ts'
import { LineSplitter } from './lines.ts'
import { peekRequestId, REQUEST_ID_SCAN_CHARS } from './request-id.ts'
import { CANCEL_REQUEST } from './schemas.ts'
import type { JsonRpcErrorObject, RequestId } from './types.ts'

export interface RequestContext {
  id: RequestId
  /** Aborted when the sender cancels the request (`$/cancelRequest`) or the peer closes. */
  signal: AbortSignal
}

export interface PeerOptions {
  /** What the other side writes (a child's stdout, or our stdin). */
  input: NodeJS.ReadableStream
  /** Where we write (a child's stdin, or our stdout). */
  output: NodeJS.WritableStream
  /** Longest line accepted; a longer one is answered with -32600 and dropped. Default `DEFAULT_MAX_LINE_BYTES` (64 MiB). */
  maxLineBytes?: number
  /** Answers a request: return the result, or throw (an `RpcError` keeps its code; anything else is -32603). */
  onRequest?: (method: string, params: unknown, context: RequestContext) => unknown
  onNotification?: (method: string, params: unknown) => void
  /** The input ended. Without this option the peer closes itself; with it, the owner decides when to `close()`. */
  onInputEnd?: () => void
  /** Diagnostics about what the other side sent that could not be used. */
  log?: (message: string) => void
  /** Sees every line read (`in`) and written (`out`). */
  trace?: (direction: 'in' | 'out', line: string) => void
}

export interface RequestOptions {
  signal?: AbortSignal
  timeoutMs?: number
}

/** A request that got no answer in time. */
export class RequestTimeoutError extends Error {
  override name = 'RequestTimeoutError'
}

interface Pending {
  method: string
  resolve(value: unknown): void
  reject(error: Error): void
}

export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
const isId = (value: unknown): value is RequestId =>
  typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))
const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * One end of a JSON-RPC 2.0 connection over two byte streams, one JSON object
 * per line. Both sides may send requests and notifications. Protocol
 * mistakes from the other side are answered as JSON-RPC says (-32700 for a
 * line that is not JSON, -32600 for one that is not a message, -32601 when
 * there is no request handler) and reading goes on.
 */
export class JsonRpcPeer {
  private nextId = 1
  private readonly pending = new Map<RequestId, Pending>()
  private readonly handling = new Map<RequestId, AbortController>()
  private closedWith: Error | undefined
  private outputBroken = false
  private readonly detach: () => void

  constructor(private readonly options: PeerOptions) {
    const maxBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
    const splitter = new LineSplitter(
      maxBytes,
      (line) => this.receive(line),
      (bytes, head) =>
        this.sendError(
          peekRequestId(head),
          ErrorCodes.InvalidRequest,
          `a line of ${bytes} bytes is longer than the limit of ${maxBytes} bytes and was dropped`,
        ),
      REQUEST_ID_SCAN_CHARS,
    )
    const onData = (chunk: Buffer | string) => {
      if (!this.closedWith) splitter.push(chunk)
    }
    const onEnd = () => {
      if (this.closedWith) return
      splitter.end()
      if (options.onInputEnd) options.onInputEnd()
      else this.close(new ConnectionClosedError('the other side closed the connection'))
    }
    const onInputError = (error: Error) => {
      options.log?.(`input failed: ${error.message}`)
      onEnd()
    }
    const onOutputError = (error: Error) => {
      this.outputBroken = true
      options.log?.(`output failed: ${error.message}`)
    }
    options.input.on('data', onData)
    options.input.on('end', onEnd)
    options.input.on('error', onInputError)
    options.output.on('error', onOutputError)
    this.detach = () => {
      options.input.off('data', onData)
      options.input.off('end', onEnd)
      options.input.off('error', onInputError)
    }
  }

  get closed(): boolean {
    return this.closedWith !== undefined
  }

  /**
   * `request`, with the answer checked: one that does not fit `schema` rejects,
   * saying what was `expected` and what came.
   */
  async requestChecked<T>(
    method: string,
    params: unknown,
    schema: z.ZodType<T>,
    expected: string,
    options: RequestOptions = {},
  ): Promise<T> {
    const answer = await this.request(method, params, options)
    const parsed = schema.safeParse(answer)
    if (!parsed.success)
      throw new Error(`the client answered ${method} with ${JSON.stringify(answer)}, not ${expected}`)
    return parsed.data
  }

  /** Sends a request and resolves with its result; an error answer rejects with an `RpcError`. */
  request(method: string, params?: unknown, options: RequestOptions = {}): Promise<unknown> {
    if (this.closedWith) return Promise.reject(this.closedWith)
    const { signal, timeoutMs } = options
    if (signal?.aborted)
      return Promise.reject(new RpcError(ErrorCodes.RequestCancelled, `${method} was cancelled before it was sent`))
    const id = this.nextId++
    return new Promise<unknown>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined
      const giveUp = (error: Error) => {
        if (!this.pending.delete(id)) return
        cleanup()
        this.notify(CANCEL_REQUEST, { id })
        reject(error)
      }
      const onAbort = () => giveUp(new RpcError(ErrorCodes.RequestCancelled, `${method} was cancelled`))
      const cleanup = () => {
        if (timer) clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
      }
      this.pending.set(id, {
        method,
        resolve: (value) => {
          cleanup()
          resolve(value)
        },
        reject: (error) => {
          cleanup()
          reject(error)
        },
      })
      signal?.addEventListener('abort', onAbort, { once: true })
      if (timeoutMs !== undefined)
        timer = setTimeout(
          () => giveUp(new RequestTimeoutError(`${method} got no answer within ${timeoutMs} ms`)),
          timeoutMs,
        )
      this.write({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) })
    })
  }

  notify(method: string, params?: unknown): void {
    this.write({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) })
  }

  /**
   * Stops reading, rejects the requests still waiting for an answer with
   * `reason`, and aborts the signals of requests still being handled. Their
   * answers, and anything else sent later, are still written while the output
   * is open.
   */
  close(reason: Error = new ConnectionClosedError('the connection was closed')): void {
    if (this.closedWith) return
    this.closedWith = reason
    this.detach()
    for (const [id, entry] of this.pending) {
      this.pending.delete(id)
      entry.reject(reason)
    }
    for (const controller of this.handling.values()) controller.abort(reason)
  }

  /** Lines written in this tick: they leave in one write (a burst of deltas is one syscall, not hundreds). */
  private outbox: string[] = []

  private write(message: object): void {
    const line = JSON.stringify(message)
    this.options.trace?.('out', line)
    this.outbox.push(line)
    if (this.outbox.length === 1) process.nextTick(() => this.flush())
  }

  private flush(): void {
    const text = `${this.outbox.join('\n')}\n`
    this.outbox = []
    const output = this.options.output as NodeJS.WritableStream & { writableEnded?: boolean; destroyed?: boolean }
    if (this.outputBroken || output.writableEnded || output.destroyed) return
    output.write(text)
  }

  private sendError(id: RequestId | null, code: number, message: string, data?: unknown): void {
    const error: JsonRpcErrorObject = { code, message }
    if (data !== undefined) error.data = data
    this.write({ jsonrpc: '2.0', id, error })
  }

  private receive(line: string): void {
    if (line.trim() === '') return
    this.options.trace?.('in', line)
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch (error) {
      this.sendError(peekRequestId(line), ErrorCodes.ParseError, `parse error: ${describe(error)}`)
      return
    }
    if (Array.isArray(message)) {
      this.sendError(null, ErrorCodes.InvalidRequest, 'batches are not supported: send one JSON object per line')
      return
    }
    if (!isObject(message)) {
      this.sendError(null, ErrorCodes.InvalidRequest, 'a message must be a JSON object')
      return
    }
    const id = isId(message.id) ? message.id : null
    if (message.jsonrpc !== '2.0') {
      this.sendError(id, ErrorCodes.InvalidRequest, '"jsonrpc" must be "2.0"')
      return
    }
    if ('method' in message) {
      if (typeof message.method !== 'string' || message.method === '') {
        this.sendError(id, ErrorCodes.InvalidRequest, '"method" must be a non-empty string')
      } else if (message.id === undefined) {
        this.receiveNotification(message.method, message.params)
      } else if (id === null) {
        this.sendError(null, ErrorCodes.InvalidRequest, '"id" must be a string or a number')
      } else {
        void this.receiveRequest(id, message.method, message.params)
      }
      return
    }
    if ('result' in message || 'error' in message) {
      this.receiveResponse(message)
      return
    }
    this.sendError(
      id,
      ErrorCodes.InvalidRequest,
      'a message needs a "method" (a request or notification) or a "result" or "error" (a response)',
    )
  }

  private receiveNotification(method: string, params: unknown): void {
    if (method === CANCEL_REQUEST) {
      const id = isObject(params) ? params.id : undefined
      if (isId(id)) this.handling.get(id)?.abort(new RpcError(ErrorCodes.RequestCancelled, 'the request was cancelled'))
      return
    }
    try {
      this.options.onNotification?.(method, params)
    } catch (error) {
      this.options.log?.(`handling notification ${method} failed: ${describe(error)}`)
    }
  }

  private async receiveRequest(id: RequestId, method: string, params: unknown): Promise<void> {
    const handler = this.options.onRequest
    if (!handler) return this.sendError(id, ErrorCodes.MethodNotFound, `unknown method: ${method}`)
    if (this.handling.has(id))
      return this.sendError(id, ErrorCodes.InvalidRequest, `request id ${JSON.stringify(id)} is already in use`)
    const controller = new AbortController()
    this.handling.set(id, controller)
    try {
      const result = await handler(method, params, { id, signal: controller.signal })
      this.write({ jsonrpc: '2.0', id, result: result === undefined ? null : result })
    } catch (error) {
      if (error instanceof RpcError) this.sendError(id, error.code, error.message, error.data)
      else this.sendError(id, ErrorCodes.InternalError, describe(error))
    } finally {
      this.handling.delete(id)
    }
  }

  private receiveResponse(message: Record<string, unknown>): void {
    const id = isId(message.id) ? message.id : null
    const entry = id === null ? undefined : this.pending.get(id)
    if (!entry || id === null) {
      const detail = isObject(message.error) ? `: ${String(message.error.message)}` : ''
      this.options.log?.(`a response to no pending request (id ${JSON.stringify(message.id)})${detail}`)
      return
    }
    this.pending.delete(id)
    if ('error' in message) {
      const error = isObject(message.error) ? message.error : {}
      const code = typeof error.code === 'number' ? error.code : ErrorCodes.InternalError
      entry.reject(
        new RpcError(code, typeof error.message === 'string' ? error.message : `${entry.method} failed`, error.data),
      )
    } else {
      entry.resolve(message.result)
    }
  }
}
