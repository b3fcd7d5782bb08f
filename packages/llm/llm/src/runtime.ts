import { type Context, emitIsolated, ScopedRegistry, Service } from '@dsh/cordis'
import type { GenerateRequest, LlmAdapter, LlmFailure, ModelInfo, RetryPolicy, StreamChunk } from './types.ts'

declare module '@dsh/cordis' {
  interface Context {
    llm: LlmRuntime
  }
  interface Events {
    /**
     * @mode waterfall, around every model call. A listener may observe or
     * rewrite the chunk stream (call `next()`), or answer by itself (do not).
     * The request is frozen.
     */
    'llm/stream'(request: Readonly<GenerateRequest>, next: () => AsyncIterable<StreamChunk>): AsyncIterable<StreamChunk>
    /** @mode emit: a route was registered or removed. */
    'llm/routes-changed'(): void
  }
}

export function failure(code: LlmFailure['code'], message: string, extra: Partial<LlmFailure> = {}): LlmFailure {
  return { code, message, ...extra }
}

/**
 * `ctx.llm`: adapters by route and the one way to call a model. `stream`
 * never throws: an adapter error or a cancel becomes a final
 * `finish{error|aborted}` chunk.
 */
export class LlmRuntime extends Service {
  private readonly routes = new ScopedRegistry<LlmAdapter>('LLM route')
  private readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'llm')
    this.home = ctx
  }

  /** Serves `route` with `adapter` until the registering plugin is disposed or the disposer is called. */
  register(ctx: Context, route: string, adapter: LlmAdapter): () => void {
    // Registered before the route so that, disposed in reverse order, the notice comes after the removal.
    ctx.effect(() => () => void emitIsolated(this.home, 'llm/routes-changed'), `llm route ${route} notice`)
    const off = this.routes.register(ctx, route, adapter)
    void emitIsolated(this.home, 'llm/routes-changed')
    return off
  }

  listRoutes(): string[] {
    return this.routes.keys()
  }

  adapter(route: string): LlmAdapter | undefined {
    return this.routes.get(route)
  }

  models(route: string): ModelInfo[] {
    return this.routes.get(route)?.models() ?? []
  }

  /** Asks the route's server which models it offers (see `LlmAdapter.discoverModels`); rejects for an unknown route. */
  async discoverModels(route: string, signal?: AbortSignal): Promise<ModelInfo[]> {
    const adapter = this.routes.get(route)
    if (!adapter)
      throw new Error(`no model route "${route}" is registered (known: ${this.routes.keys().join(', ') || 'none'})`)
    return adapter.discoverModels(signal)
  }

  modelInfo(route: string, model: string): ModelInfo | undefined {
    return this.models(route).find((m) => m.id === model)
  }

  /** Whether the route's catalog says the model takes images; false for a model it does not list. */
  takesImages(route: string, model: string): boolean {
    return this.modelInfo(route, model)?.images === true
  }

  retryPolicy(route: string): RetryPolicy | undefined {
    return this.routes.get(route)?.retryPolicy()
  }

  stream(request: GenerateRequest): AsyncIterable<StreamChunk> {
    const frozen = Object.freeze({ ...request })
    const adapter = this.routes.get(request.provider)
    const inner = (): AsyncIterable<StreamChunk> => {
      if (!adapter) {
        const known = this.routes.keys().join(', ') || 'none'
        return single({
          type: 'finish',
          reason: 'error',
          failure: failure('UNKNOWN_ROUTE', `no model route "${request.provider}" is registered (known: ${known})`),
        })
      }
      return adapter.stream(frozen)
    }
    let source: AsyncIterable<StreamChunk>
    try {
      source = this.home.waterfall('llm/stream', frozen, inner)
    } catch (error) {
      source = single(finishFromError(error, request.signal))
    }
    return guard(source, request.signal)
  }
}

async function* single(chunk: StreamChunk): AsyncIterable<StreamChunk> {
  yield chunk
}

function finishFromError(error: unknown, signal?: AbortSignal): StreamChunk {
  if (signal?.aborted)
    return { type: 'finish', reason: 'aborted', failure: failure('ABORTED', 'the request was cancelled') }
  const message = error instanceof Error ? error.message : String(error)
  return { type: 'finish', reason: 'error', failure: failure('TRANSPORT', message) }
}

/** Enforces the stream contract: nothing after finish, a finish always, throws turned into finish. */
async function* guard(source: AsyncIterable<StreamChunk>, signal?: AbortSignal): AsyncIterable<StreamChunk> {
  try {
    for await (const chunk of source) {
      yield chunk
      if (chunk.type === 'finish') return
    }
  } catch (error) {
    yield finishFromError(error, signal)
    return
  }
  if (signal?.aborted)
    yield { type: 'finish', reason: 'aborted', failure: failure('ABORTED', 'the request was cancelled') }
  else
    yield { type: 'finish', reason: 'error', failure: failure('PROTOCOL', 'the model stream ended without a finish') }
}
