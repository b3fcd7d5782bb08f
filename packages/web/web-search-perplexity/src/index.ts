import { type Context, Schema, stringValue } from '@dsh/cordis'
import { type SearchAnswer, type SearchSource, WebSearchError } from '@dsh/web'

export const name = 'web-search-perplexity'
export const inject = ['web']

export interface PerplexityConfig {
  /** Credential reference holding the Perplexity key. */
  apiKeyEnv: string
  /** Endpoint base; `/chat/completions` is appended. */
  baseURL: string
  /** Search model. */
  model: string
  /** Upper bound on the answer's tokens. */
  maxTokens: number
  /** Recency window sent as `search_recency_filter`; none when unset. */
  searchRecency?: 'day' | 'week' | 'month' | 'year'
}

export const Config: Schema<PerplexityConfig> = Schema.object({
  apiKeyEnv: stringValue('Variable (or credentials entry) holding the Perplexity key.', 'PERPLEXITY_API_KEY'),
  baseURL: stringValue('Endpoint base; /chat/completions is appended.', 'https://api.perplexity.ai'),
  model: stringValue('Search model.', 'sonar'),
  maxTokens: Schema.natural().min(1).default(1024).description("Upper bound on the answer's tokens."),
  searchRecency: Schema.union(['day', 'week', 'month', 'year'] as const).description(
    'Recency window; none when unset.',
  ),
})

interface PerplexityBody {
  choices?: Array<{ message?: { content?: unknown } }>
  search_results?: Array<{ title?: unknown; url?: unknown; date?: unknown; snippet?: unknown }>
  citations?: unknown
}

/** A Perplexity chat completion as an answer and its sources (`search_results`, else the bare `citations`). */
export function perplexityAnswer(raw: unknown): SearchAnswer {
  const body = raw as PerplexityBody
  const content = body?.choices?.[0]?.message?.content
  if (typeof content !== 'string')
    throw new WebSearchError('WEB_SEARCH_BAD_ANSWER', 'Perplexity answered without a message')
  const sources: SearchSource[] = []
  if (Array.isArray(body.search_results)) {
    for (const r of body.search_results) {
      if (typeof r.url !== 'string') continue
      const source: SearchSource = { title: typeof r.title === 'string' ? r.title : r.url, url: r.url }
      if (typeof r.snippet === 'string' && r.snippet) source.snippet = r.snippet
      if (typeof r.date === 'string' && r.date) source.publishedAt = r.date
      sources.push(source)
    }
  } else if (Array.isArray(body.citations)) {
    for (const url of body.citations) if (typeof url === 'string') sources.push({ title: url, url })
  }
  return { answer: content, sources }
}

/** Registers the `perplexity` search provider on `ctx.web`. */
export function apply(ctx: Context, config: PerplexityConfig) {
  const label = 'Perplexity'
  ctx.web.registerSearchProvider(ctx, 'perplexity', {
    label,
    async search(request): Promise<SearchAnswer> {
      const key = await ctx.web.key(config.apiKeyEnv, label)
      const body = await ctx.web.postJson(new URL(`${config.baseURL.replace(/\/+$/, '')}/chat/completions`), {
        label,
        keyEnv: config.apiKeyEnv,
        headers: { authorization: `Bearer ${key}` },
        body: {
          model: config.model,
          messages: [{ role: 'user', content: request.query }],
          max_tokens: config.maxTokens,
          ...(config.searchRecency ? { search_recency_filter: config.searchRecency } : {}),
        },
        signal: request.signal,
      })
      const answer = perplexityAnswer(body)
      return { ...answer, sources: answer.sources.slice(0, request.maxResults) }
    },
  })
}
