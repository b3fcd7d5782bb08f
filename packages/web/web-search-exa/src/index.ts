import { type Context, Schema, stringValue } from '@dsh/cordis'
import { type SearchAnswer, type SearchSource, WebSearchError } from '@dsh/web'

export const name = 'web-search-exa'
export const inject = ['web']

export interface ExaConfig {
  /** Credential reference holding the Exa key. */
  apiKeyEnv: string
  /** Endpoint base; `/search` is appended. */
  baseURL: string
  /** Retrieval mode sent as Exa's `type`. */
  searchType: 'auto' | 'keyword' | 'neural'
  /** Results asked for; the tool's per-call cap when unset. */
  numResults?: number
  /** Highlight sentences asked for per result (the snippet). */
  highlightsPerResult: number
}

export const Config: Schema<ExaConfig> = Schema.object({
  apiKeyEnv: stringValue('Variable (or credentials entry) holding the Exa key.', 'EXA_API_KEY'),
  baseURL: stringValue('Endpoint base; /search is appended.', 'https://api.exa.ai'),
  searchType: Schema.union(['auto', 'keyword', 'neural'] as const)
    .default('auto')
    .description("Exa's `type`."),
  numResults: Schema.natural().min(1).description("Results asked for; the tool's cap when unset."),
  highlightsPerResult: Schema.natural().min(1).default(1).description('Highlight sentences per result.'),
})

interface ExaResult {
  title?: unknown
  url?: unknown
  publishedDate?: unknown
  highlights?: unknown
  text?: unknown
}

/** Exa's `POST /search` answer as sources: title, URL, the highlights as the snippet, the publication day. */
export function exaSources(body: unknown): SearchSource[] {
  const results = (body as { results?: unknown })?.results
  if (!Array.isArray(results)) throw new WebSearchError('WEB_SEARCH_BAD_ANSWER', 'Exa answered without a results list')
  return (results as ExaResult[]).flatMap((r) => {
    if (typeof r.url !== 'string') return []
    const highlights = Array.isArray(r.highlights) ? r.highlights.filter((h) => typeof h === 'string') : []
    const snippet = highlights.length ? highlights.join(' … ') : typeof r.text === 'string' ? r.text.slice(0, 300) : ''
    const source: SearchSource = { title: typeof r.title === 'string' ? r.title : r.url, url: r.url }
    if (snippet) source.snippet = snippet
    if (typeof r.publishedDate === 'string') source.publishedAt = r.publishedDate.slice(0, 10)
    return [source]
  })
}

/** Registers the `exa` search provider on `ctx.web`. */
export function apply(ctx: Context, config: ExaConfig) {
  const label = 'Exa'
  ctx.web.registerSearchProvider(ctx, 'exa', {
    label,
    async search(request): Promise<SearchAnswer> {
      const key = await ctx.web.key(config.apiKeyEnv, label)
      const body = await ctx.web.postJson(new URL(`${config.baseURL.replace(/\/+$/, '')}/search`), {
        label,
        keyEnv: config.apiKeyEnv,
        headers: { 'x-api-key': key },
        body: {
          query: request.query,
          type: config.searchType,
          numResults: config.numResults ?? request.maxResults,
          contents: { highlights: { numSentences: config.highlightsPerResult, highlightsPerUrl: 1 } },
        },
        signal: request.signal,
      })
      return { sources: exaSources(body) }
    },
  })
}
