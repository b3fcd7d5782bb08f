import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { completionEvents, estimateTokens } from './chunks.ts'
import type { MockReply, MockScript, RecordedRequest, StreamOptions } from './types.ts'

export interface MockLlmOptions {
  /** Answers every request that finds the queue empty, instead of the "script ran out" 500. Handy for benchmarks. */
  fallback?: MockScript
  /** Default `127.0.0.1`. */
  host?: string
  /** Default 0: any free port. */
  port?: number
  /** How long the server keeps an idle connection open. Default: Node's (5 s). */
  keepAliveTimeoutMs?: number
  /**
   * More routes the mock answers from its script besides the chat completions paths, e.g.
   * `(method, path) => method === 'POST' && path === '/v1/messages'` for an Anthropic mock.
   */
  routes?: (method: string, path: string) => boolean
  /**
   * A strict server: a chat completions body with a top-level field outside this list is refused with
   * 400 naming the field, before any script runs (as strict OpenAI-compatible servers do).
   */
  strictFields?: readonly string[]
}

/** The request fields of OpenAI's chat completions API, for `strictFields`. */
export const OPENAI_CHAT_FIELDS: readonly string[] = [
  'model',
  'messages',
  'stream',
  'stream_options',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'response_format',
  'seed',
  'user',
]

export interface MockLlm {
  /** Base URL (`http://127.0.0.1:<port>`), for `DEEPSEEK_BASE_URL` or an adapter's `baseURL`. */
  readonly url: string
  readonly port: number
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[]
  /** Scripted answers not used yet. */
  readonly pending: number
  /** Sockets currently open to the server. */
  readonly openConnections: number
  /** Queues answers; each request takes the next one. */
  enqueue(...scripts: MockScript[]): void
  /** Sets or clears the answer used when the queue is empty. */
  setFallback(script?: MockScript): void
  /** Resolves with the requests once at least `count` have arrived. */
  waitForRequests(count: number): Promise<RecordedRequest[]>
  /** Resolves once exactly `count` sockets are open (e.g. 0 after a client closed its pool). */
  waitForConnections(count: number): Promise<void>
  /** Forgets queued answers and recorded requests. */
  reset(): void
  /** Stops the server and destroys every open connection, stalled streams included. */
  close(): Promise<void>
}

const COMPLETION_PATHS = new Set(['/chat/completions', '/v1/chat/completions'])
/** A keep-alive comment goes out before the first event and after every this many events. */
const KEEP_ALIVE_EVERY = 4

/** Starts a scripted OpenAI-compatible chat completions server on a free loopback port. */
export async function startMockLlm(options: MockLlmOptions = {}): Promise<MockLlm> {
  const queue: MockScript[] = []
  const requests: RecordedRequest[] = []
  const sockets = new Set<Socket>()
  let fallback = options.fallback
  let requestWaiters: Array<() => void> = []
  let connectionWaiters: Array<() => void> = []

  const notify = (waiters: Array<() => void>) => {
    for (const wake of waiters) wake()
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, { error: { message: `llm-mock: internal error: ${String(error)}`, type: 'mock_error' } })
      else res.destroy()
    })
  })
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs
  server.on('connection', (socket) => {
    sockets.add(socket)
    notify(connectionWaiters)
    socket.on('close', () => {
      sockets.delete(socket)
      notify(connectionWaiters)
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req)
    let body: unknown
    try {
      body = rawBody.length > 0 ? JSON.parse(rawBody) : undefined
    } catch {
      body = undefined
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const record: RecordedRequest = {
      seq: requests.length + 1,
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      body,
      rawBody,
      answer: 'unscripted',
    }
    requests.push(record)
    notify(requestWaiters)

    const completions = record.method === 'POST' && COMPLETION_PATHS.has(path)
    if (!completions && !options.routes?.(record.method, path)) {
      record.answer = 'not-found'
      sendJson(res, 404, {
        error: {
          message: `llm-mock: no route for ${record.method} ${path} (serves POST /chat/completions and /v1/chat/completions)`,
          type: 'invalid_request_error',
        },
      })
      return
    }
    if (completions && (body === undefined || typeof body !== 'object')) {
      record.answer = 'bad-request'
      sendJson(res, 400, {
        error: { message: 'llm-mock: the request body is not a JSON object', type: 'invalid_request_error' },
      })
      return
    }

    const unknown = completions && options.strictFields ? unknownField(body, options.strictFields) : undefined
    if (unknown !== undefined) {
      record.answer = 'unknown-field'
      sendJson(res, 400, {
        error: {
          message: `Unrecognized request argument supplied: ${unknown}`,
          type: 'invalid_request_error',
          param: unknown,
          code: null,
        },
      })
      return
    }

    const script = queue.shift() ?? fallback
    if (script === undefined) {
      sendJson(res, 500, {
        error: {
          message: `llm-mock: the script ran out: request #${record.seq} (${record.method} ${path}) found no queued reply. Queue one with mock.enqueue(...) before the client calls.`,
          type: 'mock_script_exhausted',
        },
      })
      return
    }
    let answer: MockReply
    try {
      answer = typeof script === 'function' ? await script(record) : script
    } catch (error) {
      sendJson(res, 500, {
        error: {
          message: `llm-mock: the script function threw: ${error instanceof Error ? error.message : String(error)}`,
          type: 'mock_error',
        },
      })
      return
    }
    record.answer = answer.kind
    await respond(answer, record, res)
  }

  async function respond(answer: MockReply, record: RecordedRequest, res: ServerResponse): Promise<void> {
    const requestId = `mock-${record.seq}`
    const model = typeof record.body?.model === 'string' ? (record.body.model as string) : undefined
    const promptEstimate = estimateTokens(record.rawBody)
    switch (answer.kind) {
      case 'error': {
        const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body)
        const headers: Record<string, string> = {
          'content-type': typeof answer.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
          'x-request-id': requestId,
          ...answer.headers,
        }
        if (answer.retryAfter !== undefined) headers['retry-after'] = String(answer.retryAfter)
        res.writeHead(answer.status, headers)
        res.end(text)
        return
      }
      case 'completion':
        return stream(res, completionEvents(answer, model, promptEstimate), answer, requestId, { end: 'end' })
      case 'cut':
      case 'stall':
        return stream(
          res,
          completionEvents(answer.reply, model, promptEstimate),
          mergeOptions(answer.reply, answer),
          requestId,
          { end: answer.kind === 'cut' ? 'destroy' : 'stall', limit: answer.after },
        )
      case 'json': {
        if (answer.delayMs) {
          const gone = new AbortController()
          res.on('close', () => gone.abort())
          try {
            await sleep(answer.delayMs, undefined, { signal: gone.signal })
          } catch {
            return
          }
        }
        res.writeHead(answer.status ?? 200, {
          'content-type': 'application/json',
          'x-request-id': requestId,
          ...answer.headers,
        })
        res.end(JSON.stringify(answer.body))
        return
      }
      case 'events':
        return stream(
          res,
          answer.events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}`),
          { ...answer, keepAlive: answer.keepAlive ?? false },
          requestId,
          { end: 'end', raw: true },
        )
      case 'raw':
        return stream(res, answer.lines, { ...answer, keepAlive: answer.keepAlive ?? false }, requestId, {
          end: answer.end ?? 'end',
          raw: true,
          status: answer.status ?? 200,
        })
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    requests,
    get pending() {
      return queue.length
    },
    get openConnections() {
      return sockets.size
    },
    enqueue(...scripts) {
      queue.push(...scripts)
    },
    setFallback(script) {
      fallback = script
    },
    waitForRequests(count) {
      return new Promise((resolve) => {
        const check = () => {
          if (requests.length < count) return
          requestWaiters = requestWaiters.filter((w) => w !== check)
          resolve(requests.slice())
        }
        requestWaiters.push(check)
        check()
      })
    },
    waitForConnections(count) {
      return new Promise((resolve) => {
        const check = () => {
          if (sockets.size !== count) return
          connectionWaiters = connectionWaiters.filter((w) => w !== check)
          resolve()
        }
        connectionWaiters.push(check)
        check()
      })
    },
    reset() {
      queue.length = 0
      requests.length = 0
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
  }
}

function unknownField(body: unknown, known: readonly string[]): string | undefined {
  if (body === null || typeof body !== 'object') return undefined
  return Object.keys(body).find((key) => !known.includes(key))
}

function mergeOptions(inner: StreamOptions, outer: StreamOptions): StreamOptions {
  return {
    delayMs: outer.delayMs ?? inner.delayMs,
    keepAlive: outer.keepAlive ?? inner.keepAlive,
    headers: { ...inner.headers, ...outer.headers },
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
    req.on('error', reject)
  })
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

interface StreamPlan {
  end: 'end' | 'destroy' | 'stall'
  /** Data events to send before ending; all when absent. */
  limit?: number
  /** Write the lines as given instead of wrapping each in `data: ...`. */
  raw?: boolean
  status?: number
}

/** Writes SSE events one by one, honouring delay, keep-alive lines and the planned ending. */
async function stream(
  res: ServerResponse,
  events: string[],
  options: StreamOptions,
  requestId: string,
  plan: StreamPlan,
): Promise<void> {
  const gone = new AbortController()
  res.on('close', () => gone.abort())
  res.writeHead(plan.status ?? 200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-request-id': requestId,
    ...options.headers,
  })
  res.flushHeaders()

  const keepAlive = options.keepAlive ?? true
  const delayMs = options.delayMs ?? 0
  const write = (text: string) => new Promise<void>((resolve) => res.write(text, () => resolve()))
  const count = Math.min(plan.limit ?? events.length, events.length)

  if (keepAlive) await write(': keep-alive\n\n')
  for (let i = 0; i < count; i++) {
    if (gone.signal.aborted) return
    if (i > 0 && delayMs > 0) {
      try {
        await sleep(delayMs, undefined, { signal: gone.signal })
      } catch {
        return
      }
    }
    const event = events[i] as string
    // A `data:` line, or a named event with its data, ends the event with a blank line.
    const complete = event.startsWith('data:') || (event.startsWith('event:') && event.includes('\ndata:'))
    if (plan.raw) await write(complete ? `${event}\n\n` : `${event}\n`)
    else await write(`data: ${event}\n\n`)
    if (keepAlive && (i + 1) % KEEP_ALIVE_EVERY === 0) await write(': keep-alive\n\n')
  }
  if (gone.signal.aborted) return
  switch (plan.end) {
    case 'end':
      res.end()
      return
    case 'destroy':
      res.socket?.destroy()
      return
    case 'stall':
      await new Promise<void>((resolve) => gone.signal.addEventListener('abort', () => resolve(), { once: true }))
      return
  }
}
