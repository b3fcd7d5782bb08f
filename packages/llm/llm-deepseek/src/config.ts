import { Schema, stringList, stringValue } from '@dsh/cordis'
import { type LlmErrorCode, type ModelInfo, type ModelPrice, REASONING_EFFORTS, type ReasoningEffort } from '@dsh/llm'

/** How a route asks the server for reasoning. */
export type ReasoningParams = 'deepseek' | 'effort' | 'none'

export interface ModelEntry {
  id: string
  contextWindow: number
  /** Overrides the route's `maxTokens` for this model. */
  maxOutputTokens?: number
  /** The model accepts image input. */
  images: boolean
  /** USD per million tokens. Unset: the published price on the `deepseek` route, else no cost is shown. */
  price?: ModelPrice
}

export interface RetryConfig {
  maxRetries: number
  initialDelayMs: number
  maxDelayMs: number
  jitterRatio: number
  retryableCodes: LlmErrorCode[]
}

export interface OpenAICompatibleConfig {
  /** The server's base URL (`http://127.0.0.1:11434/v1`, `https://openrouter.ai/api/v1`). The route exists only when set. */
  baseURL?: string
  /** Environment variable (or credentials entry) holding the key; unset means no `Authorization` header. */
  apiKeyEnv?: string
  models: ModelEntry[]
  reasoningParams: ReasoningParams
  /** Sent as `max_tokens` when a request sets none and the model has no `maxOutputTokens`. Unset: not sent. */
  maxTokens?: number
}

export interface DeepSeekConfig {
  /** Fixed base URL. Unset: `$<baseURLEnv>` at request time, else `https://api.deepseek.com`. */
  baseURL?: string
  baseURLEnv: string
  apiKeyEnv: string
  reasoningEffort: ReasoningEffort
  maxTokens: number
  models: ModelEntry[]
  streamIdleTimeoutMs: number
  connectTimeoutMs: number
  keepAliveTimeoutMs: number
  retry: RetryConfig
  openaiCompatible: OpenAICompatibleConfig
}

export const DEFAULT_BASE_URL = 'https://api.deepseek.com'

export const DEFAULT_MODELS: ModelEntry[] = [
  { id: 'deepseek-v4-flash', contextWindow: 1_000_000, images: false },
  { id: 'deepseek-v4-pro', contextWindow: 1_000_000, images: false },
  { id: 'deepseek-v4-flash-vision-exp', contextWindow: 1_000_000, images: true },
]

/**
 * DeepSeek's list prices in USD per million tokens (api-docs.deepseek.com,
 * "Models & Pricing", the V4 table without peak hours), used on the
 * `deepseek` route for a model whose entry sets no `price`. The vision
 * preview is billed as Flash.
 */
export const DEEPSEEK_PRICES: Readonly<Record<string, ModelPrice>> = {
  'deepseek-v4-flash': { input: 0.14, cacheRead: 0.0028, output: 0.28 },
  'deepseek-v4-pro': { input: 0.435, cacheRead: 0.003625, output: 0.87 },
  'deepseek-v4-flash-vision-exp': { input: 0.14, cacheRead: 0.0028, output: 0.28 },
}

export const DEFAULT_RETRYABLE: LlmErrorCode[] = ['RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT', 'EMPTY_RESPONSE']

const efforts: Schema<ReasoningEffort> = Schema.union(REASONING_EFFORTS)

const PriceSchema: Schema<ModelPrice> = Schema.object({
  input: Schema.number().min(0).required().description('USD per million prompt tokens that miss the cache.'),
  cacheRead: Schema.number().min(0).required().description('USD per million prompt tokens served from the cache.'),
  output: Schema.number().min(0).required().description('USD per million output tokens (reasoning included).'),
})

const ModelSchema: Schema<ModelEntry> = Schema.object({
  id: Schema.string().required().description('Model id, sent as is.'),
  contextWindow: Schema.natural().min(1).default(1_000_000).description('Context window in tokens.'),
  maxOutputTokens: Schema.natural().min(1).description('max_tokens for this model; wins over the route default.'),
  images: Schema.boolean().default(false).description('Accepts image input.'),
  // A union with undefined: schemastery would otherwise fill a missing object and demand its fields.
  price: Schema.union([PriceSchema, Schema.const(undefined)]).description(
    'What the model costs. Unset: the published price on the deepseek route, else none.',
  ) as Schema<ModelPrice | undefined>,
})

const RetrySchema: Schema<RetryConfig> = Schema.object({
  maxRetries: Schema.natural().default(5).description('Retries after the first attempt.'),
  initialDelayMs: Schema.natural().default(500).description('First backoff delay.'),
  maxDelayMs: Schema.natural().default(10_000).description('Largest backoff delay.'),
  jitterRatio: Schema.number().min(0).max(1).default(0.1).description('Random spread of each delay, as a fraction.'),
  retryableCodes: stringList('Failure codes worth another attempt.', [...DEFAULT_RETRYABLE]) as unknown as Schema<
    LlmErrorCode[]
  >,
}).description('Retry policy the retry plugin applies to these routes.')

const OpenAICompatibleSchema: Schema<OpenAICompatibleConfig> = Schema.object({
  baseURL: Schema.string().description(
    'Base URL of an OpenAI-compatible server (vLLM, Ollama, OpenRouter). Unset: no openai-compatible route.',
  ),
  apiKeyEnv: Schema.string().description(
    'Variable holding its API key. Unset: requests carry no Authorization header.',
  ),
  models: Schema.array(ModelSchema).default([]).description('Models the server offers.'),
  reasoningParams: Schema.union(['deepseek', 'effort', 'none'] as const)
    .default('none')
    .description(
      'How reasoning effort is sent: DeepSeek style (thinking + reasoning_effort, reasoning passed back), reasoning_effort only, or not at all.',
    ),
  maxTokens: Schema.natural().min(1).description('Default max_tokens. Unset: not sent.'),
}).description('A second route, `openai-compatible`, for any chat completions server.')

export const Config: Schema<DeepSeekConfig> = Schema.object({
  baseURL: Schema.string().description(
    'Fixed base URL. Unset: $DEEPSEEK_BASE_URL at request time, else https://api.deepseek.com.',
  ),
  baseURLEnv: stringValue('Variable read for the base URL when `baseURL` is unset.', 'DEEPSEEK_BASE_URL'),
  apiKeyEnv: stringValue('Variable (or credentials entry) holding the API key.', 'DEEPSEEK_API_KEY'),
  reasoningEffort: efforts.default('high').description('Effort when a request names none: off, low, high or max.'),
  maxTokens: Schema.natural().min(1).default(256_000).description('max_tokens when a request and its model set none.'),
  models: Schema.array(ModelSchema)
    .default(DEFAULT_MODELS.map((m) => ({ ...m })))
    .description('The DeepSeek model catalog.'),
  streamIdleTimeoutMs: Schema.natural()
    .min(1)
    .default(300_000)
    .description('Fail with TIMEOUT after this long without a byte.'),
  connectTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('Fail with TIMEOUT when a connection takes longer.'),
  keepAliveTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('How long an idle pooled connection stays open.'),
  retry: RetrySchema,
  openaiCompatible: OpenAICompatibleSchema,
})

export function modelInfo(entry: ModelEntry): ModelInfo {
  const info: ModelInfo = { id: entry.id, contextWindow: entry.contextWindow }
  if (entry.maxOutputTokens !== undefined) info.maxOutputTokens = entry.maxOutputTokens
  if (entry.images) info.images = true
  if (entry.price) info.price = { ...entry.price }
  return info
}

/**
 * What the shipped catalog knows of a model, without a running route: the
 * default `deepseek` models at their list price. For readers of stored logs
 * outside a profile (`dsh sessions`), which do not see a profile's config.
 */
export function shippedModelInfo(provider: string, model: string): ModelInfo | undefined {
  const entry = provider === 'deepseek' ? DEFAULT_MODELS.find((m) => m.id === model) : undefined
  return entry ? modelInfo(withPublishedPrice(entry)) : undefined
}

/** A `deepseek` route entry with the published price filled in when it sets none. */
export function withPublishedPrice(entry: ModelEntry): ModelEntry {
  const published = DEEPSEEK_PRICES[entry.id]
  return entry.price || !published ? entry : { ...entry, price: published }
}
