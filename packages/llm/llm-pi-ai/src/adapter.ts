import { assertNever } from '@dsh/cordis'
import {
  failure,
  type GenerateRequest,
  LlmAdapter,
  type LlmFailure,
  type Message,
  type ModelInfo,
  type RetryPolicy,
  type StreamChunk,
} from '@dsh/llm'
import { httpFailure, type SecretLookup } from '@dsh/llm-deepseek'
import type * as PiAi from '@mariozechner/pi-ai'
import type { PiAiModelEntry, PiAiProviderProfile } from './config.ts'

type PiAiModule = typeof PiAi
type PiModel = PiAi.Model<PiAi.Api>

let loading: Promise<PiAiModule> | undefined
/** pi-ai and its provider SDKs load on first use: a start that never calls these routes does not pay for them. */
export function loadPiAi(): Promise<PiAiModule> {
  loading ??= import('@mariozechner/pi-ai')
  return loading
}

export interface PiAiRouteSettings {
  route: string
  profile: PiAiProviderProfile
  retry: RetryPolicy
  userAgent: string
}

const EFFORT_LEVELS = { low: 'low', high: 'high', max: 'xhigh' } as const

/** One route served through pi-ai. One `stream()` is one attempt: pi-ai's and its SDKs' own retries are off. */
export class PiAiAdapter extends LlmAdapter {
  private catalogCache: PiModel[] | undefined

  constructor(
    readonly settings: PiAiRouteSettings,
    private readonly lookup: SecretLookup,
  ) {
    super()
  }

  get label(): string {
    const p = this.settings.profile
    return p.displayName ?? (p.baseURL ? `${this.settings.route} at ${new URL(p.baseURL).origin}` : this.settings.route)
  }

  override models(): ModelInfo[] {
    const configured = this.settings.profile.models
    if (configured.length > 0) return configured.map((entry) => this.info(entry))
    return (this.catalogCache ?? []).map((m) => this.infoOf(m))
  }

  override retryPolicy(): RetryPolicy {
    return { ...this.settings.retry, retryableCodes: [...this.settings.retry.retryableCodes] }
  }

  override async discoverModels(signal?: AbortSignal): Promise<ModelInfo[]> {
    const profile = this.settings.profile
    if (!profile.discover) {
      await this.catalog()
      return this.models()
    }
    const wire = await this.wire()
    const base = await this.baseURL()
    if (!base)
      throw new Error(
        profile.baseURLEnv
          ? `${this.label} has no address: set ${profile.baseURLEnv} (${this.lookup.places(profile.baseURLEnv)})`
          : `${this.label} has no base URL to list models from`,
      )
    const key = profile.apiKeyEnv ? (await this.lookup.get(profile.apiKeyEnv))?.trim() : undefined
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.settings.userAgent }
    const url = new URL(`${base.replace(/\/+$/, '')}/models`)
    if (key) {
      if (wire === 'anthropic-messages') {
        headers['x-api-key'] = key
        headers['anthropic-version'] = '2023-06-01'
      } else if (wire === 'google-generative-ai') headers['x-goog-api-key'] = key
      else headers.authorization = `Bearer ${key}`
    }
    const response = await fetch(url, { headers, ...(signal ? { signal } : {}) })
    const text = await response.text()
    if (!response.ok) throw new Error(httpFailure(response.status, text, {}, this.httpContext()).message)
    let body: { data?: Array<{ id?: unknown }>; models?: Array<{ name?: unknown }> }
    try {
      body = JSON.parse(text)
    } catch {
      throw new Error(`${this.label} answered ${url.pathname} with something that is not JSON`)
    }
    const ids = [
      ...(body.data ?? []).map((m) => m.id),
      ...(body.models ?? []).map((m) => (typeof m.name === 'string' ? m.name.replace(/^models\//, '') : undefined)),
    ].filter((id): id is string => typeof id === 'string' && id.length > 0)
    const known = new Map(profile.models.map((entry) => [entry.id, entry]))
    const catalog = await this.catalog()
    return ids.map((id) => {
      const entry = known.get(id)
      if (entry) return this.info(entry)
      const listed = catalog.find((m) => m.id === id)
      return listed ? this.infoOf(listed) : this.info({ id })
    })
  }

  async *stream(request: GenerateRequest): AsyncIterable<StreamChunk> {
    const profile = this.settings.profile
    if (request.signal?.aborted) {
      yield { type: 'finish', reason: 'aborted', failure: failure('ABORTED', 'the request was cancelled') }
      return
    }
    let key: string | undefined
    try {
      if (profile.apiKeyEnv) key = (await this.lookup.get(profile.apiKeyEnv))?.trim() || undefined
    } catch (error) {
      yield errorFinish('INVALID_CREDENTIAL', `Could not read the credentials for ${this.label}: ${message(error)}`)
      return
    }
    if (!key && profile.requireKey) {
      const where = profile.apiKeyEnv
        ? this.lookup.places(profile.apiKeyEnv)
        : `give the route an apiKeyEnv in the llm-pi-ai config`
      yield errorFinish('MISSING_CREDENTIAL', `No API key for ${this.label}: ${where}.`)
      return
    }

    let pi: PiAiModule
    let model: PiModel
    try {
      pi = await loadPiAi()
      model = await this.model(request.model)
    } catch (error) {
      yield errorFinish('INVALID_REQUEST', message(error))
      return
    }
    const entry = profile.models.find((m) => m.id === request.model)
    const maxTokens = request.maxTokens ?? entry?.maxTokens
    const effort = request.purpose === 'title' ? 'off' : (request.reasoningEffort ?? 'off')
    const options: PiAi.StreamOptions = {
      // Local servers need no key, but the SDKs insist on one.
      apiKey: key ?? 'no-key',
      maxRetries: 0,
      timeoutMs: profile.timeoutMs,
      headers: { 'user-agent': this.settings.userAgent, ...profile.headers },
      ...(request.signal ? { signal: request.signal } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.sessionId ? { sessionId: request.sessionId } : {}),
    }
    const level = effort !== 'off' && model.reasoning ? EFFORT_LEVELS[effort] : undefined
    // Chat completions servers get no output cap unless one was asked for (pi-ai's simple API always sends one,
    // which a small local model refuses); the other wires require or default it, and take pi-ai's mapping.
    const events =
      model.api === 'openai-completions'
        ? pi.stream(model, toContext(request, model), { ...options, ...(level ? { reasoningEffort: level } : {}) })
        : pi.streamSimple(model, toContext(request, model), { ...options, ...(level ? { reasoning: level } : {}) })

    const streamed = new Map<number, string>()
    let sawContent = false
    for await (const event of events) {
      switch (event.type) {
        case 'start':
        case 'text_start':
        case 'text_end':
        case 'thinking_start':
        case 'thinking_end':
        case 'toolcall_start':
          break
        case 'text_delta':
          if (event.delta) sawContent = true
          yield { type: 'text-delta', index: event.contentIndex, text: event.delta }
          break
        case 'thinking_delta':
          yield { type: 'reasoning-delta', index: event.contentIndex, text: event.delta }
          break
        case 'toolcall_delta': {
          const block = event.partial.content[event.contentIndex]
          const call = block?.type === 'toolCall' ? block : undefined
          streamed.set(event.contentIndex, (streamed.get(event.contentIndex) ?? '') + event.delta)
          yield {
            type: 'tool-call-delta',
            index: event.contentIndex,
            ...(call?.id ? { id: call.id } : {}),
            ...(call?.name ? { name: call.name } : {}),
            argumentsDelta: event.delta,
          }
          break
        }
        case 'toolcall_end': {
          sawContent = true
          const sent = streamed.get(event.contentIndex)
          yield {
            type: 'tool-call-delta',
            index: event.contentIndex,
            id: event.toolCall.id,
            name: event.toolCall.name,
            argumentsDelta: sent === undefined ? JSON.stringify(event.toolCall.arguments ?? {}) : '',
          }
          break
        }
        case 'done': {
          const usage = event.message.usage
          yield {
            type: 'usage',
            usage: { inputTokens: usage.input, outputTokens: usage.output, cacheReadTokens: usage.cacheRead },
          }
          if (event.reason === 'stop' && !sawContent) {
            yield errorFinish('EMPTY_RESPONSE', `${this.label} answered with neither text nor a tool call.`)
            return
          }
          const reason = event.reason === 'toolUse' ? 'tool-calls' : event.reason === 'length' ? 'max-tokens' : 'stop'
          yield { type: 'finish', reason }
          return
        }
        case 'error': {
          if (event.reason === 'aborted' || request.signal?.aborted) {
            yield { type: 'finish', reason: 'aborted', failure: failure('ABORTED', 'the request was cancelled') }
            return
          }
          yield { type: 'finish', reason: 'error', failure: this.failureOf(event.error.errorMessage ?? '') }
          return
        }
        default:
          assertNever(event, 'pi-ai stream event')
      }
    }
  }

  private httpContext() {
    return {
      label: this.label,
      ...(this.settings.profile.apiKeyEnv ? { keyEnv: this.settings.profile.apiKeyEnv } : {}),
    }
  }

  /** An SDK error message (`401 {"error": …}`, `got status: 429 …`, `Connection error.`) as a failure with a code. */
  private failureOf(text: string): LlmFailure {
    const status =
      /^\s*(\d{3})\b/.exec(text)?.[1] ??
      /status:?\s*(\d{3})\b/i.exec(text)?.[1] ??
      /"code":\s*(\d{3})\b/.exec(text)?.[1]
    if (status) {
      const body = text.replace(/^\s*\d{3}\s*/, '').replace(/^got status:?\s*\d{3}[^.{]*\.?\s*/i, '')
      return httpFailure(Number(status), body, {}, this.httpContext())
    }
    if (/timed? ?out/i.test(text)) return failure('TIMEOUT', `${this.label} did not answer in time: ${text}`)
    if (/connection|fetch failed|ECONNREFUSED|ENOTFOUND|socket/i.test(text))
      return failure('TRANSPORT', `Could not reach ${this.label}: ${text}`)
    return failure('SERVER', `${this.label} failed: ${text || 'no error message'}`)
  }

  private async catalog(): Promise<PiModel[]> {
    if (this.catalogCache) return this.catalogCache
    const pi = await loadPiAi()
    const name = this.catalogName(pi)
    this.catalogCache = name ? (pi.getModels(name as PiAi.KnownProvider) as PiModel[]) : []
    return this.catalogCache
  }

  private catalogName(pi: PiAiModule): string | undefined {
    const wanted = this.settings.profile.catalog ?? this.settings.route
    return (pi.getProviders() as string[]).includes(wanted) ? wanted : undefined
  }

  private async wire(): Promise<string> {
    return this.settings.profile.api ?? (await this.catalog())[0]?.api ?? 'openai-completions'
  }

  private async baseURL(): Promise<string | undefined> {
    return (await this.configuredBaseURL()) ?? (await this.catalog())[0]?.baseUrl
  }

  /** `baseURL`, else the value of the `baseURLEnv` credential (checked to be http(s)), else undefined. */
  private async configuredBaseURL(): Promise<string | undefined> {
    const { baseURL, baseURLEnv } = this.settings.profile
    if (baseURL || !baseURLEnv) return baseURL
    const value = (await this.lookup.get(baseURLEnv))?.trim()
    if (!value) return undefined
    if (!/^https?:\/\/\S+$/i.test(value) || !URL.canParse(value))
      throw new Error(`${this.label}: ${baseURLEnv} is not an http(s) URL: "${value}"`)
    return value
  }

  /** The pi-ai model a request names: the configured entry over the catalog's, with the route's endpoint and switches. */
  private async model(id: string): Promise<PiModel> {
    const profile = this.settings.profile
    const catalog = await this.catalog()
    const entry = profile.models.find((m) => m.id === id)
    if (profile.models.length > 0 && !entry) {
      const known = profile.models.map((m) => m.id).join(', ')
      throw new Error(`${this.label} offers no model "${id}" (configured: ${known})`)
    }
    const listed = catalog.find((m) => m.id === id)
    const api = profile.api ?? listed?.api ?? catalog[0]?.api
    const baseUrl = (await this.configuredBaseURL()) ?? listed?.baseUrl ?? catalog[0]?.baseUrl
    if (!baseUrl && profile.baseURLEnv)
      throw new Error(
        `${this.label} has no address: set ${profile.baseURLEnv} (${this.lookup.places(profile.baseURLEnv)})`,
      )
    if (!api || !baseUrl)
      throw new Error(
        `${this.label} needs "api" and "baseURL" in its llm-pi-ai profile: pi-ai has no catalog for "${this.settings.route}"`,
      )
    const images = entry?.images ?? (listed ? listed.input.includes('image') : false)
    const model: PiModel = {
      ...(listed ?? {
        name: id,
        reasoning: false,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      }),
      id,
      api,
      provider: this.settings.route,
      baseUrl,
      reasoning: entry?.reasoning ?? listed?.reasoning ?? false,
      input: images ? ['text', 'image'] : ['text'],
      contextWindow: entry?.contextWindow ?? listed?.contextWindow ?? profile.defaultContextWindow,
      maxTokens: entry?.maxTokens ?? listed?.maxTokens ?? profile.defaultMaxTokens,
    }
    if (profile.compat) (model as PiModel & { compat?: object }).compat = { ...profile.compat }
    if (profile.headers) model.headers = { ...profile.headers }
    return model
  }

  private info(entry: PiAiModelEntry): ModelInfo {
    const listed = this.catalogCache?.find((m) => m.id === entry.id)
    const info: ModelInfo = {
      id: entry.id,
      contextWindow: entry.contextWindow ?? listed?.contextWindow ?? this.settings.profile.defaultContextWindow,
    }
    const maxTokens = entry.maxTokens ?? listed?.maxTokens
    if (maxTokens !== undefined) info.maxOutputTokens = maxTokens
    if (entry.images ?? listed?.input.includes('image')) info.images = true
    return info
  }

  private infoOf(model: PiModel): ModelInfo {
    const info: ModelInfo = { id: model.id, contextWindow: model.contextWindow, maxOutputTokens: model.maxTokens }
    if (model.input.includes('image')) info.images = true
    return info
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function errorFinish(code: LlmFailure['code'], text: string): StreamChunk {
  return { type: 'finish', reason: 'error', failure: failure(code, text) }
}

const ZERO_USAGE: PiAi.Usage = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
}

/**
 * dsh's history as a pi-ai context. Reasoning is left out (pi-ai could only
 * replay it with the provider's signature, which the log does not keep);
 * tool results become `toolResult` messages, before the rest of their user message.
 */
export function toContext(request: GenerateRequest, model: PiModel): PiAi.Context {
  const system: string[] = []
  const messages: PiAi.Message[] = []
  const toolNames = new Map<string, string>()
  const timestamp = 0
  for (const entry of request.messages as readonly Message[]) {
    switch (entry.role) {
      case 'system':
        for (const block of entry.content) if (block.type === 'text') system.push(block.text)
        break
      case 'assistant': {
        const content: PiAi.AssistantMessage['content'] = []
        for (const block of entry.content) {
          if (block.type === 'text' && block.text) content.push({ type: 'text', text: block.text })
          else if (block.type === 'tool-call') {
            toolNames.set(block.id, block.name)
            content.push({
              type: 'toolCall',
              id: block.id,
              name: block.name,
              arguments: parseArguments(block.arguments),
            })
          }
        }
        messages.push({
          role: 'assistant',
          content,
          api: model.api,
          provider: model.provider,
          model: model.id,
          usage: ZERO_USAGE,
          stopReason: content.some((c) => c.type === 'toolCall') ? 'toolUse' : 'stop',
          timestamp,
        })
        break
      }
      case 'user': {
        const parts: Array<PiAi.TextContent | PiAi.ImageContent> = []
        for (const block of entry.content) {
          switch (block.type) {
            case 'tool-result': {
              const content: Array<PiAi.TextContent | PiAi.ImageContent> = []
              for (const inner of block.content) {
                if (inner.type === 'text') content.push({ type: 'text', text: inner.text })
                else if (inner.type === 'image') content.push(image(inner))
              }
              if (content.length === 0) content.push({ type: 'text', text: '(no output)' })
              messages.push({
                role: 'toolResult',
                toolCallId: block.toolCallId,
                toolName: toolNames.get(block.toolCallId) ?? 'tool',
                content,
                isError: block.isError === true,
                timestamp,
              })
              break
            }
            case 'text':
              parts.push({ type: 'text', text: block.text })
              break
            case 'image':
              parts.push(image(block))
              break
            case 'reasoning':
            case 'tool-call':
              break
            default:
              assertNever(block, 'content block')
          }
        }
        if (parts.length > 0) messages.push({ role: 'user', content: parts, timestamp })
        break
      }
      default:
        assertNever(entry.role, 'message role')
    }
  }
  const context: PiAi.Context = { messages }
  if (system.length > 0) context.systemPrompt = system.join('\n\n')
  if (request.tools && request.tools.length > 0) {
    context.tools = request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      // pi-ai types parameters as TypeBox schemas; plain JSON Schema is what they are on the wire.
      parameters: tool.parameters as unknown as PiAi.TSchema,
    }))
  }
  return context
}

function parseArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text)
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {}
  } catch {
    return {}
  }
}

function image(block: { data: string; mediaType: string }): PiAi.ImageContent {
  const data = block.data.startsWith('data:') ? block.data.slice(block.data.indexOf(',') + 1) : block.data
  return { type: 'image', data, mimeType: block.mediaType }
}
