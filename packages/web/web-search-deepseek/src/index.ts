import { type Context, Schema, stringValue } from '@dsh/cordis'
import { type SearchAnswer, type SearchSource, type WebSearchCode, WebSearchError } from '@dsh/web'

export const name = 'web-search-deepseek'
export const inject = ['web']

export interface DeepSeekSearchConfig {
  /** Credential reference holding the key: the model's own by default. */
  apiKeyEnv: string
  /** Anthropic-compatible endpoint base; `/messages` is appended. Unset: `<DeepSeek base URL>/anthropic/v1`. */
  baseURL?: string
  /** Variable holding the DeepSeek base URL the default endpoint derives from (the model route's). */
  baseURLEnv: string
  /** Model that runs the search. */
  model: string
  /** `anthropic-version` header. */
  apiVersion: string
  /** Upper bound on the reply's tokens. */
  maxTokens: number
  /** `web_search` server-tool uses per request at most. */
  maxUses: number
}

export const DEFAULT_DEEPSEEK_BASE_URL = 'https://api.deepseek.com'

export const Config: Schema<DeepSeekSearchConfig> = Schema.object({
  apiKeyEnv: stringValue('Variable (or credentials entry) holding the key.', 'DEEPSEEK_API_KEY'),
  baseURL: Schema.string().description('Anthropic-compatible endpoint base; unset: <DeepSeek base URL>/anthropic/v1.'),
  baseURLEnv: stringValue('Variable whose DeepSeek base URL the default endpoint derives from.', 'DEEPSEEK_BASE_URL'),
  model: stringValue('Model that runs the search.', 'deepseek-v4-flash'),
  apiVersion: stringValue('anthropic-version header.', '2023-06-01'),
  maxTokens: Schema.natural().min(1).default(4096).description("Upper bound on the reply's tokens."),
  maxUses: Schema.natural().min(1).default(5).description('web_search server-tool uses per request at most.'),
})

/** What the server tool's error codes mean for the model. */
const TOOL_ERRORS: Record<string, WebSearchCode> = {
  too_many_requests: 'WEB_SEARCH_RATE_LIMIT',
  max_uses_exceeded: 'WEB_SEARCH_QUOTA',
}

interface Block {
  type?: unknown
  text?: unknown
  content?: unknown
  citations?: unknown
}

/**
 * A Messages reply with `web_search` server-tool results: the sources are
 * the results' titles and URLs (snippets from the text's citations of
 * them), the answer the reply's text. A reply whose searches all failed is
 * an error naming the server tool's code.
 */
export function messagesAnswer(raw: unknown): SearchAnswer {
  const content = (raw as { content?: unknown })?.content
  if (!Array.isArray(content))
    throw new WebSearchError('WEB_SEARCH_BAD_ANSWER', 'DeepSeek web search answered without content blocks')
  const sources: SearchSource[] = []
  const byUrl = new Map<string, SearchSource>()
  const errors: string[] = []
  const texts: string[] = []
  for (const block of content as Block[]) {
    if (block.type === 'web_search_tool_result') {
      if (Array.isArray(block.content)) {
        for (const r of block.content as Array<Record<string, unknown>>) {
          if (r.type !== 'web_search_result' || typeof r.url !== 'string' || byUrl.has(r.url)) continue
          const source: SearchSource = { title: typeof r.title === 'string' ? r.title : r.url, url: r.url }
          if (typeof r.page_age === 'string' && r.page_age) source.publishedAt = r.page_age
          byUrl.set(r.url, source)
          sources.push(source)
        }
      } else {
        const code = (block.content as { error_code?: unknown })?.error_code
        errors.push(typeof code === 'string' ? code : 'unknown')
      }
    } else if (block.type === 'text' && typeof block.text === 'string') {
      texts.push(block.text)
      for (const c of Array.isArray(block.citations) ? (block.citations as Array<Record<string, unknown>>) : []) {
        if (typeof c.url !== 'string' || typeof c.cited_text !== 'string') continue
        const source = byUrl.get(c.url)
        if (source && !source.snippet) source.snippet = c.cited_text
      }
    }
  }
  if (sources.length === 0 && errors.length > 0) {
    const first = errors[0] as string
    throw new WebSearchError(
      TOOL_ERRORS[first] ?? 'WEB_SEARCH_FAILED',
      `DeepSeek's web_search tool failed: ${errors.join(', ')}`,
    )
  }
  const answer = texts.join('').trim()
  return answer ? { answer, sources } : { sources }
}

/** Registers the `deepseek` search provider on `ctx.web`: DeepSeek's Anthropic-compatible Messages endpoint with its server-side `web_search` tool. */
export function apply(ctx: Context, config: DeepSeekSearchConfig) {
  const label = 'DeepSeek web search'
  const endpoint = async () => {
    const fixed = config.baseURL?.trim()
    if (fixed) return fixed
    const base = (await ctx.web.secrets.get(config.baseURLEnv))?.trim() || DEFAULT_DEEPSEEK_BASE_URL
    return `${base.replace(/\/+$/, '')}/anthropic/v1`
  }
  ctx.web.registerSearchProvider(ctx, 'deepseek', {
    label,
    async search(request): Promise<SearchAnswer> {
      const key = await ctx.web.key(config.apiKeyEnv, label)
      const base = await endpoint()
      let url: URL
      try {
        url = new URL(`${base.replace(/\/+$/, '')}/messages`)
      } catch {
        throw new WebSearchError('WEB_PROVIDER_UNAVAILABLE', `${label}: the endpoint "${base}" is not a URL`)
      }
      const body = await ctx.web.postJson(url, {
        label,
        keyEnv: config.apiKeyEnv,
        headers: { 'x-api-key': key, 'anthropic-version': config.apiVersion },
        body: {
          model: config.model,
          max_tokens: config.maxTokens,
          messages: [
            {
              role: 'user',
              content: `Search the web for: ${request.query}\nAnswer briefly from what you find, citing the sources.`,
            },
          ],
          tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: config.maxUses }],
        },
        signal: request.signal,
      })
      const answer = messagesAnswer(body)
      return { ...answer, sources: answer.sources.slice(0, request.maxResults) }
    },
  })
}
