import type { Context } from '@dsh/cordis'
import { failure, type LlmFailure, type RetryPolicy } from '@dsh/llm'
import manifest from '../package.json' with { type: 'json' }
import { credentialLookup } from '@dsh/credentials/lookup'
import { ChatCompletionsAdapter, HttpPool } from './adapter.ts'
import { Config, DEFAULT_BASE_URL, type DeepSeekConfig, withPublishedPrice } from './config.ts'

export { Config }
export type { DeepSeekConfig, ModelEntry, OpenAICompatibleConfig, ReasoningParams, RetryConfig } from './config.ts'
export {
  DEEPSEEK_PRICES,
  DEFAULT_BASE_URL,
  DEFAULT_MODELS,
  DEFAULT_RETRYABLE,
  shippedModelInfo,
} from './config.ts'
export { credentialLookup, type SecretLookup } from '@dsh/credentials/lookup'
export { ChatCompletionsAdapter, HttpPool, type RouteSettings } from './adapter.ts'
export { buildBody, toWireMessages, type WireMessage } from './request.ts'
export { ChunkMapper, mapUsage } from './response.ts'
export { httpFailure, retryAfterMs } from './errors.ts'

export const name = 'llm-deepseek'
export const inject = ['llm']

function parseBaseURL(value: string, origin: string): { url: URL } | { failure: LlmFailure } {
  try {
    const url = new URL(value)
    if (url.protocol === 'http:' || url.protocol === 'https:') return { url }
  } catch {
    // fall through
  }
  return { failure: failure('INVALID_REQUEST', `${origin} is not an http(s) URL: "${value}"`) }
}

/** Fails the load when a configured URL is unusable, naming the field. */
function checkConfiguredURL(value: string | undefined, field: string): void {
  if (value === undefined) return
  const parsed = parseBaseURL(value, `llm-deepseek config ${field}`)
  if ('failure' in parsed) throw new Error(parsed.failure.message)
}

/** Registers the `deepseek` route, and `openai-compatible` when `openaiCompatible.baseURL` is set. */
export function apply(ctx: Context, config: DeepSeekConfig) {
  // An empty string in a patch file means "unset".
  const fixedBaseURL = config.baseURL?.trim() || undefined
  const compatibleBaseURL = config.openaiCompatible.baseURL?.trim() || undefined
  checkConfiguredURL(fixedBaseURL, 'baseURL')
  checkConfiguredURL(compatibleBaseURL, 'openaiCompatible.baseURL')

  const lookup = credentialLookup(ctx)

  let pool!: HttpPool
  ctx.effect(() => {
    pool = new HttpPool({ connectTimeoutMs: config.connectTimeoutMs, keepAliveTimeoutMs: config.keepAliveTimeoutMs })
    return () => pool.close()
  }, 'llm-deepseek http pool')

  const retry: RetryPolicy = { ...config.retry, retryableCodes: [...config.retry.retryableCodes] }
  const common = { retry, streamIdleTimeoutMs: config.streamIdleTimeoutMs, userAgent: `dsh/${manifest.version}` }

  ctx.llm.register(
    ctx,
    'deepseek',
    new ChatCompletionsAdapter(
      {
        ...common,
        route: 'deepseek',
        label: 'DeepSeek',
        baseURL: async () => {
          if (fixedBaseURL !== undefined) return parseBaseURL(fixedBaseURL, 'baseURL')
          const fromEnv = await lookup.get(config.baseURLEnv)
          return fromEnv !== undefined
            ? parseBaseURL(fromEnv.trim(), config.baseURLEnv)
            : { url: new URL(DEFAULT_BASE_URL) }
        },
        apiKeyEnv: config.apiKeyEnv,
        reasoningParams: 'deepseek',
        defaultEffort: config.reasoningEffort,
        maxTokens: config.maxTokens,
        models: config.models.map(withPublishedPrice),
      },
      pool,
      lookup,
    ),
  )

  const compatible = config.openaiCompatible
  if (compatibleBaseURL !== undefined) {
    const url = new URL(compatibleBaseURL)
    ctx.llm.register(
      ctx,
      'openai-compatible',
      new ChatCompletionsAdapter(
        {
          ...common,
          route: 'openai-compatible',
          label: `the openai-compatible server at ${url.origin}`,
          baseURL: async () => ({ url }),
          ...(compatible.apiKeyEnv !== undefined ? { apiKeyEnv: compatible.apiKeyEnv } : {}),
          reasoningParams: compatible.reasoningParams,
          defaultEffort: config.reasoningEffort,
          ...(compatible.maxTokens !== undefined ? { maxTokens: compatible.maxTokens } : {}),
          models: compatible.models,
        },
        pool,
        lookup,
      ),
    )
  }
}
