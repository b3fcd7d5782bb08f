import { type LookupAddress, lookup } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import { hostAllowed, nonPublicReason } from '@dsh/address-rules'
import { type Context, Schema, ScopedRegistry, Service, stringList, stringValue } from '@dsh/cordis'
import { credentialLookup, type SecretLookup } from '@dsh/credentials/lookup'
import { httpFailure } from '@dsh/llm-deepseek'
import { Agent, request } from 'undici'

declare module '@dsh/cordis' {
  interface Context {
    web: Web
  }
}

/** One search a provider runs: a single query, at most `maxResults` sources back. */
export interface SearchRequest {
  query: string
  maxResults: number
  signal: AbortSignal
}

/** One source: where it is, what it is called, what it says. */
export interface SearchSource {
  title: string
  url: string
  snippet?: string
  publishedAt?: string
}

export interface SearchAnswer {
  /** A summary the provider wrote from its sources, when it writes one. */
  answer?: string
  /** Ranked best first. */
  sources: SearchSource[]
}

/** A search backend (DeepSeek, Exa, Perplexity, ...), registered under its id. */
export interface SearchProvider {
  /** Named in messages: `Exa`, `DeepSeek web search`. */
  label: string
  search(request: SearchRequest): Promise<SearchAnswer>
}

/** Codes a failed search carries to the model. */
export type WebSearchCode =
  | 'WEB_SEARCH_AUTH'
  | 'WEB_SEARCH_QUOTA'
  | 'WEB_SEARCH_RATE_LIMIT'
  | 'WEB_SEARCH_FAILED'
  | 'WEB_SEARCH_BAD_ANSWER'
  | 'WEB_SEARCH_BLOCKED_ADDRESS'
  | 'WEB_PROVIDER_MISSING'
  | 'WEB_PROVIDER_UNAVAILABLE'

/** A search that failed, with a message written for the model and the user. */
export class WebSearchError extends Error {
  override name = 'WebSearchError'

  constructor(
    readonly code: WebSearchCode,
    message: string,
  ) {
    super(message)
  }
}

export interface WebConfig {
  /** The provider `web_search` uses. */
  searchProvider: string
  /** Let search endpoints be loopback, private or other non-public addresses. */
  allowPrivate: boolean
  /** Hosts (or `*.domain` patterns, or IP literals) exempt from the address check. */
  allowHosts: string[]
}

export const Config: Schema<WebConfig> = Schema.object({
  searchProvider: stringValue(
    'The search provider web_search uses: deepseek, exa, perplexity, or any other registered one.',
    'deepseek',
  ),
  allowPrivate: Schema.boolean()
    .default(false)
    .description('Let a configured search endpoint be a loopback, private or other non-public address.'),
  allowHosts: stringList('Search endpoint hosts exempt from the address check (`*.corp.example`, IP literals).'),
})

const QUOTA_CODES: Record<string, WebSearchCode> = {
  AUTH: 'WEB_SEARCH_AUTH',
  QUOTA: 'WEB_SEARCH_QUOTA',
  RATE_LIMIT: 'WEB_SEARCH_RATE_LIMIT',
}

export interface PostOptions {
  /** Named in messages. */
  label: string
  /** The key's variable, named when the provider refuses it. */
  keyEnv?: string
  headers: Record<string, string>
  body: unknown
  signal: AbortSignal
}

/**
 * `ctx.web`: search providers by id and the one way they reach the network.
 * Search endpoints come from configuration a project could bring along, so
 * each connection goes only to public addresses (checked when it is made, so
 * a later DNS answer cannot move it) unless `allowPrivate` or `allowHosts`
 * says otherwise.
 */
export class Web extends Service {
  private readonly providers = new ScopedRegistry<SearchProvider>('web search provider')
  private readonly config: WebConfig
  private agent: InstanceType<typeof Agent> | undefined
  readonly secrets: SecretLookup

  constructor(ctx: Context, config: WebConfig) {
    super(ctx, 'web')
    this.config = config
    this.secrets = credentialLookup(ctx)
    ctx.effect(() => () => void this.agent?.destroy(), 'web search connections')
  }

  /** Serves searches as `id` until the registering plugin is disposed. */
  registerSearchProvider(ctx: Context, id: string, provider: SearchProvider): () => void {
    return this.providers.register(ctx, id, provider)
  }

  searchProviders(): string[] {
    return this.providers.keys()
  }

  /** The configured provider, or an error that says what is loaded. */
  searchProvider(): SearchProvider & { id: string } {
    const id = this.config.searchProvider
    const provider = this.providers.get(id)
    if (!provider) {
      const loaded = this.providers.keys().join(', ') || 'none'
      throw new WebSearchError(
        'WEB_PROVIDER_MISSING',
        `the web search provider "${id}" is not loaded (loaded: ${loaded}); set searchProvider in the web config`,
      )
    }
    return Object.assign(Object.create(provider), { id })
  }

  async search(request: SearchRequest): Promise<SearchAnswer & { provider: string }> {
    const provider = this.searchProvider()
    return { ...(await provider.search(request)), provider: provider.id }
  }

  /** A required key, or an error naming the variable and where to set it. */
  async key(name: string, label: string): Promise<string> {
    const value = (await this.secrets.get(name))?.trim()
    if (!value)
      throw new WebSearchError('WEB_PROVIDER_UNAVAILABLE', `${label} has no API key: ${this.secrets.places(name)}`)
    return value
  }

  /**
   * POSTs JSON to a search endpoint and returns the parsed answer. HTTP
   * errors become `WebSearchError`s by status (refused key, quota, rate
   * limit), quoting the provider; non-public addresses are refused.
   */
  async postJson(url: URL, options: PostOptions): Promise<unknown> {
    this.checkLiteral(url, options.label)
    let response: Awaited<ReturnType<typeof request>>
    try {
      response = await request(url, {
        method: 'POST',
        dispatcher: this.dispatcher(),
        headers: { 'content-type': 'application/json', accept: 'application/json', ...options.headers },
        body: JSON.stringify(options.body),
        signal: options.signal,
      })
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason ?? error
      const blocked = [error, (error as { cause?: unknown }).cause].find((e) => e instanceof WebSearchError)
      if (blocked) throw this.blocked(options.label, url.origin, blocked.message)
      throw new WebSearchError(
        'WEB_SEARCH_FAILED',
        `could not reach ${options.label} at ${url.origin}: ${error instanceof Error ? error.message : String(error)}`,
      )
    }
    const text = await response.body.text()
    if (response.statusCode >= 400) {
      const failure = httpFailure(response.statusCode, text, response.headers, {
        label: options.label,
        ...(options.keyEnv ? { keyEnv: options.keyEnv } : {}),
      })
      throw new WebSearchError(QUOTA_CODES[failure.code] ?? 'WEB_SEARCH_FAILED', failure.message)
    }
    try {
      return JSON.parse(text)
    } catch {
      throw new WebSearchError(
        'WEB_SEARCH_BAD_ANSWER',
        `${options.label} answered with something that is not JSON: ${text.slice(0, 200)}`,
      )
    }
  }

  private exempt(host: string): boolean {
    return this.config.allowPrivate || hostAllowed(host, this.config.allowHosts)
  }

  private blocked(label: string, origin: string, detail: string): WebSearchError {
    return new WebSearchError(
      'WEB_SEARCH_BLOCKED_ADDRESS',
      `${label}'s endpoint ${origin} is not a public address: ${detail}. ` +
        'The user can allow it in the web config (allowPrivate or allowHosts).',
    )
  }

  private checkLiteral(url: URL, label: string): void {
    const host = url.hostname.replace(/^\[|\]$/g, '')
    if (!isIP(host) || this.exempt(host)) return
    const reason = nonPublicReason(host)
    if (reason) throw this.blocked(label, url.origin, reason)
  }

  /** Connections whose every resolved address passed the check; the checked address is the one connected to. */
  private dispatcher(): InstanceType<typeof Agent> {
    this.agent ??= new Agent({
      connect: {
        lookup: ((host: string, options: object, callback: (...args: unknown[]) => void) => {
          lookup(host, { ...options, all: true, verbatim: true }, (error, found) => {
            if (error) return callback(error)
            const addresses = found as LookupAddress[]
            if (!this.exempt(host)) {
              for (const { address } of addresses) {
                const reason = nonPublicReason(address)
                if (reason)
                  return callback(
                    new WebSearchError('WEB_SEARCH_BLOCKED_ADDRESS', `${reason} (${host} resolves to ${address})`),
                  )
              }
            }
            if ((options as { all?: boolean }).all) callback(null, addresses)
            else callback(null, addresses[0]?.address, addresses[0]?.family)
          })
        }) as unknown as LookupFunction,
      },
    })
    return this.agent
  }
}

export const name = 'web'

/** Provides `ctx.web`. */
export function apply(ctx: Context, config: WebConfig) {
  ctx.plugin(Web, config)
}
