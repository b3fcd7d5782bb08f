import { Schema, stringList, stringValue } from '@dsh/cordis'
import { DEFAULT_RETRYABLE, type RetryConfig } from '@dsh/llm-deepseek'

/** The wire protocols this adapter lets pi-ai speak. */
export const PI_AI_WIRES = [
  'openai-completions',
  'openai-responses',
  'anthropic-messages',
  'google-generative-ai',
] as const
export type PiAiWire = (typeof PI_AI_WIRES)[number]

/** The route a launch flag or variable names for a generic OpenAI-compatible server. */
export const OPENAI_COMPATIBLE_ROUTE = 'openai-compatible'

export interface PiAiModelEntry {
  /** Model id sent to the provider. */
  id: string
  contextWindow?: number
  /** Output cap; also the per-request default for this model. */
  maxTokens?: number
  /** Accepts image input. */
  images?: boolean
  /** A reasoning model: reasoning efforts are sent to it. */
  reasoning?: boolean
}

/** Wire switches for servers that pi-ai cannot recognise by their URL (`openai-completions` only). */
export interface PiAiCompat {
  supportsStore?: boolean
  supportsDeveloperRole?: boolean
  supportsReasoningEffort?: boolean
  supportsUsageInStreaming?: boolean
  supportsStrictMode?: boolean
  maxTokensField?: 'max_tokens' | 'max_completion_tokens'
}

export interface PiAiProviderProfile {
  /** Credential reference (a variable name) resolved per request through `ctx.credentials`, then the environment. */
  apiKeyEnv?: string
  /** Whether a request without a key is refused (`MISSING_CREDENTIAL`) or sent without one (local servers). */
  requireKey: boolean
  /** Name shown in messages; defaults to the route. */
  displayName?: string
  /** pi-ai's catalog provider whose models and endpoint this route starts from; defaults to the route when pi-ai knows it. */
  catalog?: string
  /** Wire protocol; required when the route has no catalog. */
  api?: PiAiWire
  /** Endpoint; defaults to the catalog's. */
  baseURL?: string
  /** Without `baseURL`: a credential (a plain setting) whose value is the endpoint, read at each request. */
  baseURLEnv?: string
  /** The route's models; empty serves the catalog as it is. */
  models: PiAiModelEntry[]
  /** Ask the server's `/models` for the model list (`discoverModels`); otherwise the configured or catalog list. */
  discover: boolean
  compat?: PiAiCompat
  headers?: Record<string, string>
  /** Context window of a model neither the entry nor the catalog sizes. */
  defaultContextWindow: number
  /** Output capability of a model neither the entry nor the catalog sizes. */
  defaultMaxTokens: number
  /** HTTP timeout of one request, in milliseconds. */
  timeoutMs: number
}

/** A route chosen at launch (`--provider`, `--base-url`, `DSH_PROVIDER`, `DSH_BASE_URL`). */
export interface LaunchRoute {
  provider?: string
  baseURL?: string
}

export interface PiAiConfig {
  providers: Record<string, PiAiProviderProfile>
  /** Where `openai-compatible` comes from at launch, and the base URL that replaces the launch route's. */
  launch: LaunchRoute
  /** The key reference of the launch-made `openai-compatible` route (optional: local servers need none). */
  compatibleKeyEnv: string
  /** The credential holding the endpoint of the settings-made openai-compatible route; empty: no such route. */
  compatibleBaseUrlEnv: string
  retry: RetryConfig
}

const ModelSchema: Schema<PiAiModelEntry> = Schema.object({
  id: Schema.string().required().description('Model id, sent as is.'),
  contextWindow: Schema.natural().min(1).description('Context window in tokens.'),
  maxTokens: Schema.natural().min(1).description('Output cap, and the default of each request to this model.'),
  images: Schema.boolean().description('Accepts image input.'),
  reasoning: Schema.boolean().description('A reasoning model: efforts are sent to it.'),
})

const CompatSchema: Schema<PiAiCompat> = Schema.object({
  supportsStore: Schema.boolean().description('The server accepts `store`.'),
  supportsDeveloperRole: Schema.boolean().description('The server accepts the `developer` role.'),
  supportsReasoningEffort: Schema.boolean().description('The server accepts `reasoning_effort`.'),
  supportsUsageInStreaming: Schema.boolean().description('The server accepts `stream_options.include_usage`.'),
  supportsStrictMode: Schema.boolean().description('The server accepts `strict` in tool definitions.'),
  maxTokensField: Schema.union(['max_tokens', 'max_completion_tokens'] as const).description(
    'Which output-cap field the server reads.',
  ),
})

export const ProviderSchema: Schema<PiAiProviderProfile> = Schema.object({
  apiKeyEnv: Schema.string().description('Variable (or credentials entry) holding the API key.'),
  requireKey: Schema.boolean().default(true).description('Refuse to send a request without a key.'),
  displayName: Schema.string().description('Name shown in messages; the route by default.'),
  catalog: Schema.string().description("pi-ai's catalog provider to start from; the route when pi-ai knows it."),
  api: Schema.union(PI_AI_WIRES).description('Wire protocol; required for a route pi-ai has no catalog for.'),
  baseURL: Schema.string().description("Endpoint; the catalog's by default."),
  baseURLEnv: Schema.string().description(
    'Without baseURL: the credential whose value is the endpoint, read per request.',
  ),
  models: Schema.array(ModelSchema).default([]).description('Models; empty serves the catalog.'),
  discover: Schema.boolean().default(false).description("List models from the server's /models."),
  compat: CompatSchema,
  headers: Schema.dict(Schema.string()).description('Extra request headers.'),
  defaultContextWindow: Schema.natural().min(1).default(262_144).description('Context window of an unsized model.'),
  defaultMaxTokens: Schema.natural().min(1).default(32_768).description('Output capability of an unsized model.'),
  timeoutMs: Schema.natural().min(1).default(600_000).description('HTTP timeout of one request.'),
})

/** A full profile from the fields given, the rest at their defaults. */
export function profileOf(fields: Partial<PiAiProviderProfile>): PiAiProviderProfile {
  return ProviderSchema(fields as PiAiProviderProfile)
}

const RetrySchema: Schema<RetryConfig> = Schema.object({
  maxRetries: Schema.natural().default(5),
  initialDelayMs: Schema.natural().default(500),
  maxDelayMs: Schema.natural().default(10_000),
  jitterRatio: Schema.number().min(0).max(1).default(0.1),
  retryableCodes: stringList('Failure codes worth another attempt.', [...DEFAULT_RETRYABLE]) as unknown as Schema<
    RetryConfig['retryableCodes']
  >,
}).description('Retry policy the retry plugin applies to these routes.')

/** The providers every install knows: each route waits for its key, nothing is sent without one. */
export const DEFAULT_PROVIDERS: Record<string, { apiKeyEnv: string }> = {
  anthropic: { apiKeyEnv: 'ANTHROPIC_API_KEY' },
  openai: { apiKeyEnv: 'OPENAI_API_KEY' },
  google: { apiKeyEnv: 'GEMINI_API_KEY' },
  openrouter: { apiKeyEnv: 'OPENROUTER_API_KEY' },
}

export const Config: Schema<PiAiConfig> = Schema.object({
  providers: Schema.dict(ProviderSchema)
    .default(Object.fromEntries(Object.entries(DEFAULT_PROVIDERS).map(([route, p]) => [route, profileOf(p)])))
    .description('Routes by name, each a pi-ai provider profile.'),
  launch: Schema.object({
    provider: Schema.string().description('The route chosen at launch.'),
    baseURL: Schema.string().description("Replaces that route's endpoint; makes `openai-compatible` when it names it."),
  }).description('The route and base URL chosen at launch (flags and variables).'),
  compatibleKeyEnv: stringValue(
    'Key reference of the launch-made (or settings-made) openai-compatible route; sent when set.',
    'OPENAI_COMPATIBLE_API_KEY',
  ),
  compatibleBaseUrlEnv: stringValue(
    'Credential holding the endpoint of an openai-compatible route served when the launch makes none (the web settings write it); empty: none.',
    'OPENAI_COMPATIBLE_BASE_URL',
  ),
  retry: RetrySchema,
})
