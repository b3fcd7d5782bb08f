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
  if (provider && baseURL && !FOREIGN_ROUTES.has(provider)) {
    checkURL(baseURL, 'launch.baseURL')
    const known = routes.get(provider)
    if (known) routes.set(provider, { ...known, baseURL })
    else {
      const label = provider === OPENAI_COMPATIBLE_ROUTE ? 'OpenAI-compatible' : provider
      routes.set(
        provider,
        compatibleProfile(config, { displayName: `the ${label} server at ${new URL(baseURL).origin}`, baseURL }),
      )
    }
  }
  // Without a launch-made one, the openai-compatible route reads its endpoint from a credential the web settings write.
  if (!routes.has(OPENAI_COMPATIBLE_ROUTE) && config.compatibleBaseUrlEnv) {
    routes.set(
      OPENAI_COMPATIBLE_ROUTE,
      compatibleProfile(config, {
        displayName: 'the OpenAI-compatible server',
        baseURLEnv: config.compatibleBaseUrlEnv,
      }),
    )
  }
  return routes
}

/** A route to a server pi-ai cannot recognise: only what every chat completions server accepts. */
function compatibleProfile(
  config: PiAiConfig,
  endpoint: Pick<PiAiProviderProfile, 'displayName' | 'baseURL' | 'baseURLEnv'>,
): PiAiProviderProfile {
  return profileOf({
    apiKeyEnv: config.compatibleKeyEnv,
    requireKey: false,
    ...endpoint,
    api: 'openai-completions',
    discover: true,
    compat: {
      supportsStore: false,
      supportsDeveloperRole: false,
      supportsReasoningEffort: false,
      supportsStrictMode: false,
      maxTokensField: 'max_tokens',
    },
  })
}

/** Registers one `ctx.llm` route per provider profile (and the launch route); pi-ai itself loads on the first call. */
export function apply(ctx: Context, config: PiAiConfig) {
  const lookup = credentialLookup(ctx)
  const retry = { ...config.retry, retryableCodes: [...config.retry.retryableCodes] }
  for (const [route, profile] of resolveRoutes(config)) {
    const adapter = new PiAiAdapter({ route, profile, retry, userAgent: `dsh/${manifest.version}` }, lookup)
    // The settings-made route yields to another adapter's openai-compatible route (llm-deepseek's openaiCompatible).
    if (profile.baseURLEnv && !profile.baseURL && ctx.llm.listRoutes().includes(route)) continue
    ctx.llm.register(ctx, route, adapter)
  }
}
