import { type Context, type JsonValue, Schema } from '@dsh/cordis'
import { defineTool, ToolError, type ToolOutput } from '@dsh/tools'
import { type SearchAnswer, type SearchSource, WebSearchError } from '@dsh/web'
import { z } from 'zod'

export const name = 'tool-web-search'
export const inject = ['tools', 'web']

export interface WebSearchToolConfig {
  /** Sources one call returns at most, all queries merged. */
  searchMaxResults: number
  /** Queries one call accepts at most. */
  searchMaxQueries: number
  /** Budget of one call, every query included, in milliseconds. */
  searchTimeoutMs: number
}

export const Config: Schema<WebSearchToolConfig> = Schema.object({
  searchMaxResults: Schema.natural().min(1).default(8).description('Sources one web_search call returns at most.'),
  searchMaxQueries: Schema.natural().min(1).default(4).description('Queries one web_search call accepts at most.'),
  searchTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('Budget of one web_search call, all its queries included, in milliseconds.'),
})

const QUERIES_DESCRIPTION = 'Required search queries; accepts 1–4 items and merges their results.'

/** The model-facing schema, exactly as the seeds' catalog has it. */
const INPUT_SCHEMA: Record<string, JsonValue> = {
  type: 'object',
  properties: {
    queries: { type: 'array', description: QUERIES_DESCRIPTION, items: { type: 'string' } },
  },
  required: ['queries'],
}

const parameters = z.object({ queries: z.array(z.string()).describe(QUERIES_DESCRIPTION) })

/** Sources of every query, taken in turns by rank (each query's best first), each URL once, at most `max`. */
export function mergeSources(lists: readonly SearchSource[][], max: number): { sources: SearchSource[]; more: number } {
  const seen = new Set<string>()
  const out: SearchSource[] = []
  let more = 0
  const longest = Math.max(0, ...lists.map((list) => list.length))
  for (let rank = 0; rank < longest; rank++) {
    for (const list of lists) {
      const source = list[rank]
      if (!source || seen.has(source.url)) continue
      seen.add(source.url)
      if (out.length < max) out.push(source)
      else more++
    }
  }
  return { sources: out, more }
}

function sourceLine(source: SearchSource): string {
  const title = source.title.trim() || source.url
  const snippet = source.snippet?.replace(/\s+/g, ' ').trim()
  const date = source.publishedAt ? ` (${source.publishedAt})` : ''
  return `- [${title}](${source.url})${snippet ? ` — ${snippet}${date}` : date}`
}

/** The tool's text: the answers (headed by their query when there are several), the sources, a citation reminder. */
export function renderResults(
  queries: readonly string[],
  answers: readonly SearchAnswer[],
  max: number,
): { text: string; count: number } {
  const lines: string[] = []
  answers.forEach((answer, i) => {
    const text = answer.answer?.trim()
    if (!text) return
    if (queries.length > 1) lines.push(`## ${queries[i]}`, '')
    lines.push(text, '')
  })
  const { sources, more } = mergeSources(
    answers.map((a) => a.sources),
    max,
  )
  if (sources.length === 0) {
    lines.push('No results found.')
    return { text: lines.join('\n').trim(), count: 0 }
  }
  lines.push('Sources:', ...sources.map(sourceLine))
  if (more > 0) lines.push(`(${more} more source${more === 1 ? '' : 's'} left out: at most ${max} per call.)`)
  lines.push('', 'Cite the sources you use by their URL.')
  return { text: lines.join('\n'), count: sources.length }
}

/** Registers `web_search` on `ctx.tools`; the search itself is `ctx.web`'s configured provider. */
export function apply(ctx: Context, config: WebSearchToolConfig) {
  ctx.tools.register(
    ctx,
    defineTool({
      name: 'web_search',
      description:
        'Search the web for current information. Provide 1–4 queries in the required queries array. ' +
        'Returns an optional summary answer and a list of source URLs.',
      parameters,
      inputSchema: INPUT_SCHEMA,
      timeoutMs: config.searchTimeoutMs,
      readOnly: true,
      isConcurrencySafe: () => true,
      // The queries go to the search provider the user configured, as the conversation goes to the model's;
      // no host the model names is contacted, so no network permission is asked for.
      access: (args) => ({ kind: 'read', summary: `web search: ${args.queries.join(' | ')}` }),
      presentation: {
        kind: 'search',
        view: 'web',
        title: (args) => {
          const queries = Array.isArray(args.queries) ? args.queries.filter((q) => typeof q === 'string') : []
          return queries.length ? `Search the web: ${queries.join(' | ')}` : 'Search the web'
        },
      },
      async execute(args, run): Promise<ToolOutput> {
        const queries = [...new Set(args.queries.map((q) => q.trim()).filter((q) => q.length > 0))]
        if (queries.length === 0)
          throw new ToolError('WEB_SEARCH_BAD_QUERY', 'queries needs at least one non-empty query')
        if (queries.length > config.searchMaxQueries)
          throw new ToolError(
            'WEB_SEARCH_BAD_QUERY',
            `queries takes at most ${config.searchMaxQueries} queries per call, got ${queries.length}; split them over several calls`,
          )
        let provider = ''
        let answers: SearchAnswer[]
        try {
          answers = await Promise.all(
            queries.map(async (query) => {
              const found = await ctx.web.search({ query, maxResults: config.searchMaxResults, signal: run.signal })
              provider = found.provider
              return found
            }),
          )
        } catch (error) {
          if (error instanceof WebSearchError) throw new ToolError(error.code, error.message)
          throw error
        }
        const { text, count } = renderResults(queries, answers, config.searchMaxResults)
        return { content: text, meta: { provider, queries, sources: count } }
      },
    }),
  )
}
