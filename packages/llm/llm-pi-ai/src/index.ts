import type { Context } from '@dsh/cordis'
import { credentialLookup } from '@dsh/llm-deepseek'
import manifest from '../package.json' with { type: 'json' }
import { PiAiAdapter } from './adapter.ts'
import { OPENAI_COMPATIBLE_ROUTE, type PiAiConfig, type PiAiProviderProfile, profileOf } from './config.ts'

export { Config, DEFAULT_PROVIDERS, OPENAI_COMPATIBLE_ROUTE, PI_AI_WIRES } from './config.ts'
export type { LaunchRoute, PiAiCompat, PiAiConfig, PiAiModelEntry, PiAiProviderProfile, PiAiWire } from './config.ts'
export { loadPiAi, PiAiAdapter, toContext } from './adapter.ts'

export const name = 'llm-pi-ai'
export const inject = ['llm']

/** Routes that another adapter serves: a launch base URL for them is not this plugin's to apply. */
const FOREIGN_ROUTES = new Set(['deepseek'])

function checkURL(value: string, field: string): string {
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {
    // reported below
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new Error(`llm-pi-ai config ${field} is not an http(s) URL: "${value}"`)
  return value
}

/**
 * The routes of one configuration: each provider profile, the launch base URL
 * applied to the launch route, and a generic OpenAI-compatible route when the
 * launch names a route no profile describes.
 */
export function resolveRoutes(config: PiAiConfig): Map<string, PiAiProviderProfile> {
  const routes = new Map<string, PiAiProviderProfile>()
  for (const [route, profile] of Object.entries(config.providers)) {
    const base = profile.baseURL?.trim() || undefined
    if (base) checkURL(base, `providers.${route}.baseURL`)
    const { baseURL: _unused, ...rest } = profile
    routes.set(route, base ? { ...rest, baseURL: base } : rest)
  }
  const provider = config.launch.provider?.trim() || undefined
  const baseURL = config.launch.baseURL?.trim() || undefined
  if (!provider || !baseURL || FOREIGN_ROUTES.has(provider)) return routes
  checkURL(baseURL, 'launch.baseURL')
  const known = routes.get(provider)
  if (known) routes.set(provider, { ...known, baseURL })
  else {
    routes.set(
      provider,
      profileOf({
        apiKeyEnv: config.compatibleKeyEnv,
        requireKey: false,
        displayName: `the ${provider === OPENAI_COMPATIBLE_ROUTE ? 'OpenAI-compatible' : provider} server at ${new URL(baseURL).origin}`,
        api: 'openai-completions',
        baseURL,
        discover: true,
        // A server pi-ai cannot recognise gets only what every chat completions server accepts.
        compat: {
          supportsStore: false,
          supportsDeveloperRole: false,
          supportsReasoningEffort: false,
          supportsStrictMode: false,
          maxTokensField: 'max_tokens',
        },
      }),
    )
  }
  return routes
}

/** Registers one `ctx.llm` route per provider profile (and the launch route); pi-ai itself loads on the first call. */
export function apply(ctx: Context, config: PiAiConfig) {
  const lookup = credentialLookup(ctx)
  const retry = { ...config.retry, retryableCodes: [...config.retry.retryableCodes] }
  for (const [route, profile] of resolveRoutes(config)) {
    ctx.llm.register(
      ctx,
      route,
      new PiAiAdapter({ route, profile, retry, userAgent: `dsh/${manifest.version}` }, lookup),
    )
  }
}
