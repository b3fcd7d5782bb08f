import type { SecretLookup } from '@dsh/credentials/lookup'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { Agent, type Dispatcher, post } from './http.ts'
import {
  failure,
  type GenerateRequest,
  LlmAdapter,
  type LlmErrorCode,
  type LlmFailure,
  type ModelInfo,
  type ReasoningEffort,
  type RetryPolicy,
  type StreamChunk,
} from '@dsh/llm'
import { type ModelEntry, modelInfo, type ReasoningParams } from './config.ts'
import { httpFailure, isConnectTimeout, networkDetail, providerMessage, requestIdOf } from './errors.ts'
import { buildBody } from './request.ts'
import { ChunkMapper } from './response.ts'

/** Why a request's controller was aborted. */
class Stop {
  constructor(readonly why: 'caller' | 'idle' | 'closed' | 'finished') {}
}

/** The keep-alive connection pool of one plugin instance, and the requests running on it. */
export class HttpPool {
  readonly agent: InstanceType<typeof Agent>
  private readonly active = new Set<AbortController>()
  closed = false

  constructor(readonly options: { connectTimeoutMs: number; keepAliveTimeoutMs: number }) {
    // Our own watchdog handles slow headers and bodies, so undici's timers are off.
    this.agent = new Agent({
      connect: { timeout: options.connectTimeoutMs },
      keepAliveTimeout: options.keepAliveTimeoutMs,
      headersTimeout: 0,
      bodyTimeout: 0,
    })
  }

  track(controller: AbortController): void {
    this.active.add(controller)
  }

  untrack(controller: AbortController): void {
    this.active.delete(controller)
  }

  /** Aborts running requests and closes every socket. */
  async close(): Promise<void> {
    this.closed = true
    for (const controller of this.active) controller.abort(new Stop('closed'))
    this.active.clear()
    await this.agent.destroy()
  }
}

export interface RouteSettings {
  route: string
  /** Names the provider in messages: `DeepSeek`, `the openai-compatible server at …`. */
  label: string
  /** The base URL for this request, or a failure explaining why there is none. */
  baseURL: () => Promise<{ url: URL } | { failure: LlmFailure }>
  /** Where the key comes from; unset means requests carry no `Authorization` header. */
  apiKeyEnv?: string
  reasoningParams: ReasoningParams
  defaultEffort: ReasoningEffort
  maxTokens?: number
  models: ModelEntry[]
  retry: RetryPolicy
  streamIdleTimeoutMs: number
  userAgent: string
}

const finishError = (code: LlmErrorCode, message: string, extra: Partial<LlmFailure> = {}): StreamChunk => ({
  type: 'finish',
  reason: 'error',
  failure: failure(code, message, extra),
})

const finishAborted = (message: string): StreamChunk => ({
  type: 'finish',
  reason: 'aborted',
  failure: failure('ABORTED', message),
})

/**
 * How long a finished reply waits for the server to end the response after
 * `[DONE]` before handing back the result. Servers end it at once; this only
 * bounds a misbehaving one (the drain then goes on in the background).
 */
const DRAIN_GRACE_MS = 1000

const CONTROL_OR_SPACE = /[\s\u0000-\u001f\u007f]/

/** One route speaking OpenAI-style chat completions over SSE, DeepSeek flavour. One `stream()` is one attempt. */
export class ChatCompletionsAdapter extends LlmAdapter {
  constructor(
    readonly settings: RouteSettings,
    private readonly pool: HttpPool,
    private readonly lookup: SecretLookup,
  ) {
    super()
  }

  override models(): ModelInfo[] {
    return this.settings.models.map(modelInfo)
  }

  override retryPolicy(): RetryPolicy {
    return { ...this.settings.retry, retryableCodes: [...this.settings.retry.retryableCodes] }
  }

  async *stream(request: GenerateRequest): AsyncIterable<StreamChunk> {
    const s = this.settings
    if (request.signal?.aborted) {
      yield finishAborted('the request was cancelled')
      return
    }
    if (this.pool.closed) {
      yield finishError('TRANSPORT', `the ${s.route} route is gone: its plugin was unloaded`)
      return
    }

    let key: string | undefined
    let base: Awaited<ReturnType<RouteSettings['baseURL']>>
    try {
      if (s.apiKeyEnv !== undefined) key = (await this.lookup.get(s.apiKeyEnv))?.trim()
      base = await s.baseURL()
    } catch (error) {
      yield finishError(
        'INVALID_CREDENTIAL',
        `Could not read the credentials for ${s.label}: ${error instanceof Error ? error.message : String(error)}`,
      )
      return
    }
    if (s.apiKeyEnv !== undefined) {
      if (!key) {
        yield finishError('MISSING_CREDENTIAL', `No API key for ${s.label}: ${this.lookup.places(s.apiKeyEnv)}.`)
        return
      }
      if (CONTROL_OR_SPACE.test(key)) {
        yield finishError(
          'INVALID_CREDENTIAL',
          `The API key in ${s.apiKeyEnv} contains spaces or control characters; check it for a stray quote or line break.`,
        )
        return
      }
    }

    if ('failure' in base) {
      yield { type: 'finish', reason: 'error', failure: base.failure }
      return
    }
    const url = new URL(`${base.url.pathname.replace(/\/+$/, '')}/chat/completions`, base.url)
    const model = s.models.find((m) => m.id === request.model)
    const maxTokens = model?.maxOutputTokens ?? s.maxTokens
    const body = buildBody(request, {
      reasoningParams: s.reasoningParams,
      defaultEffort: s.defaultEffort,
      ...(maxTokens !== undefined ? { maxTokens } : {}),
    })
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'user-agent': s.userAgent,
    }
    if (key) headers.authorization = `Bearer ${key}`

    const controller = new AbortController()
    this.pool.track(controller)
    const onCallerAbort = () => controller.abort(new Stop('caller'))
    request.signal?.addEventListener('abort', onCallerAbort, { once: true })
    let timer: NodeJS.Timeout | undefined
    const arm = () => {
      clearTimeout(timer)
      timer = setTimeout(() => controller.abort(new Stop('idle')), s.streamIdleTimeoutMs)
    }
    const stopped = () => (controller.signal.reason instanceof Stop ? controller.signal.reason.why : undefined)
    let draining = false

    try {
      arm()
      let response: Dispatcher.ResponseData
      try {
        response = await post(this.pool.agent, url, { headers, body: JSON.stringify(body), signal: controller.signal })
      } catch (error) {
        yield this.networkFinish(error, stopped(), 'connect', url)
        return
      }
      const requestId = requestIdOf(response.headers)
      const withId = requestId !== undefined ? { requestId } : {}

      if (response.statusCode < 200 || response.statusCode >= 300) {
        let text: string
        try {
          text = await response.body.text()
        } catch (error) {
          yield this.networkFinish(error, stopped(), 'stream', url, requestId)
          return
        }
        yield {
          type: 'finish',
          reason: 'error',
          failure: httpFailure(response.statusCode, text, response.headers, {
            label: s.label,
            ...(s.apiKeyEnv ? { keyEnv: s.apiKeyEnv } : {}),
          }),
        }
        return
      }
      const contentType = String(response.headers['content-type'] ?? '')
      if (contentType && !contentType.includes('text/event-stream')) {
        const text = await response.body.text().catch(() => '')
        yield finishError(
          'PROTOCOL',
          `${s.label} answered with ${contentType} instead of an event stream: ${providerMessage(text)}`,
          { status: response.statusCode, ...withId },
        )
        return
      }

      const mapper = new ChunkMapper(s.label)
      const events: EventSourceMessage[] = []
      const parser = createParser({ onEvent: (event) => events.push(event) })
      const decoder = new TextDecoder()
      const iterator: AsyncIterator<Buffer> = response.body[Symbol.asyncIterator]()
      let sawDone = false
      for (;;) {
        let step: IteratorResult<Buffer>
        try {
          step = await iterator.next()
        } catch (error) {
          yield this.networkFinish(error, stopped(), 'stream', url, requestId)
          return
        }
        arm()
        const text = step.done ? decoder.decode() : decoder.decode(step.value, { stream: true })
        if (text) parser.feed(text)
        for (const event of events.splice(0)) {
          if (event.data.trim() === '[DONE]') {
            sawDone = true
            break
          }
          let payload: unknown
          try {
            payload = JSON.parse(event.data)
          } catch {
            const sample = event.data.length > 200 ? `${event.data.slice(0, 200)}…` : event.data
            yield finishError('PROTOCOL', `${s.label} sent a stream chunk that is not JSON: ${sample}`, withId)
            return
          }
          const mapped = mapper.map(payload)
          for (const chunk of mapped.chunks) yield chunk
          if (mapped.failure) {
            yield { type: 'finish', reason: 'error', failure: { ...mapped.failure, ...withId } }
            return
          }
        }
        if (sawDone || step.done) break
      }
      // A server that closes cleanly after its finish chunk but omits [DONE] is tolerated.
      if (!sawDone && !mapper.finished) {
        yield finishError(
          'TRANSPORT',
          `The stream from ${s.label} ended before the reply was complete (no [DONE]).`,
          withId,
        )
        return
      }
      if (sawDone) {
        // Read what follows [DONE] (normally just the end of the body) so the
        // connection goes back to the pool; wait briefly for it, then let it finish in the background.
        draining = true
        await this.settleDrain(this.drain(iterator, controller, arm, () => clearTimeout(timer)))
      }
      for (const chunk of mapper.end()) {
        yield chunk.type === 'finish' && chunk.failure ? { ...chunk, failure: { ...chunk.failure, ...withId } } : chunk
      }
    } finally {
      request.signal?.removeEventListener('abort', onCallerAbort)
      if (!draining) {
        clearTimeout(timer)
        if (!controller.signal.aborted) controller.abort(new Stop('finished'))
        this.pool.untrack(controller)
      }
    }
  }

  /** Reads a response body to its end; never rejects. The idle watchdog still applies. */
  private async drain(
    iterator: AsyncIterator<unknown>,
    controller: AbortController,
    arm: () => void,
    disarm: () => void,
  ): Promise<void> {
    try {
      for (;;) {
        arm()
        if ((await iterator.next()).done) break
      }
    } catch {
      // The reply is complete; a broken tail only costs the connection.
    } finally {
      disarm()
      this.pool.untrack(controller)
    }
  }

  /** Waits for a drain, but no longer than DRAIN_GRACE_MS. */
  private async settleDrain(drained: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([drained, new Promise<void>((resolve) => (timer = setTimeout(resolve, DRAIN_GRACE_MS)))])
    clearTimeout(timer)
  }

  private networkFinish(
    error: unknown,
    why: Stop['why'] | undefined,
    phase: 'connect' | 'stream',
    url: URL,
    requestId?: string,
  ): StreamChunk {
    const s = this.settings
    const extra: Partial<LlmFailure> = requestId !== undefined ? { requestId } : {}
    switch (why) {
      case 'caller':
        return finishAborted('the request was cancelled')
      case 'closed':
        return finishAborted(`the ${s.route} route was unloaded while the request was running`)
      case 'idle':
        return finishError(
          'TIMEOUT',
          phase === 'connect'
            ? `${s.label} did not answer within ${s.streamIdleTimeoutMs} ms`
            : `${s.label} sent nothing for ${s.streamIdleTimeoutMs} ms mid-reply`,
          extra,
        )
      case 'finished':
      case undefined:
        break
    }
    if (isConnectTimeout(error)) {
      return finishError(
        'TIMEOUT',
        `Could not connect to ${url.origin} within ${this.pool.options.connectTimeoutMs} ms`,
        extra,
      )
    }
    const detail = networkDetail(error)
    return finishError(
      'TRANSPORT',
      phase === 'connect'
        ? `Could not reach ${s.label} at ${url.origin}: ${detail}`
        : `The connection to ${s.label} broke mid-reply: ${detail}`,
      extra,
    )
  }
}
