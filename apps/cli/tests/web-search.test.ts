import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { json, type MockLlm, type RecordedRequest, reply, startMockLlm } from '@dsh/llm-mock'
import { runDsh, tempDir } from '@dsh/testkit'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { toolTexts } from './support/mocked-headless.ts'

// One server plays the model (chat completions), DeepSeek's Anthropic-compatible endpoint, and Exa and
// Perplexity, so the requests of a run come in one scripted order.
const SEARCH_PATHS = new Set(['/anthropic/v1/messages', '/exa/search', '/pplx/chat/completions'])
let mock: MockLlm
let root = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  mock = await startMockLlm({ routes: (method, route) => method === 'POST' && SEARCH_PATHS.has(route) })
})
afterAll(() => mock.close())
beforeEach(async () => {
  mock.reset()
  const tmp = await tempDir()
  root = tmp.dir
  cleanup = tmp.dispose
  await mkdir(path.join(root, 'work'))
})
afterEach(() => cleanup())

/** A patch choosing the provider, pointing it at the mock, and letting search endpoints be loopback. */
async function patch(provider: string, extra: string[] = []): Promise<string> {
  const file = path.join(root, `${provider}.yml`)
  await writeFile(
    file,
    [
      '- id: web',
      `  config: { searchProvider: ${provider}, allowHosts: ["127.0.0.1"] }`,
      '- id: web-search-exa',
      `  config: { baseURL: "${mock.url}/exa" }`,
      '- id: web-search-perplexity',
      `  config: { baseURL: "${mock.url}/pplx" }`,
      ...extra,
      '',
    ].join('\n'),
  )
  return file
}

function headless(args: string[], env: Record<string, string | undefined> = {}) {
  return runDsh(['--profile', 'headless', ...args], {
    home: path.join(root, 'home'),
    cwd: path.join(root, 'work'),
    env: { DEEPSEEK_BASE_URL: mock.url, DEEPSEEK_API_KEY: 'sk-test-key', ...env },
  })
}

const search = (...queries: string[]) => reply.toolCalls([{ name: 'web_search', arguments: { queries } }])
const searchRequests = () => mock.requests.filter((r) => SEARCH_PATHS.has(r.path))
const lastModelRequest = () => mock.requests.filter((r) => r.path === '/chat/completions').at(-1) as RecordedRequest

describe('web_search through the headless app', () => {
  it('offers the seed catalog schema and searches with DeepSeek by default, with the model key', async () => {
    mock.enqueue(
      search('node 20 release date'),
      json({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        content: [
          { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'node 20 release date' } },
          {
            type: 'web_search_tool_result',
            tool_use_id: 'srvtoolu_1',
            content: [
              {
                type: 'web_search_result',
                title: 'Node.js 20 is now available',
                url: 'https://nodejs.org/en/blog/announcements/v20-release-announce',
                page_age: 'April 18, 2023',
                encrypted_content: 'xyz',
              },
            ],
          },
          {
            type: 'text',
            text: 'Node.js 20 came out on 18 April 2023.',
            citations: [
              {
                type: 'web_search_result_location',
                url: 'https://nodejs.org/en/blog/announcements/v20-release-announce',
                title: 'Node.js 20 is now available',
                cited_text: 'Node.js 20 was released today.',
              },
            ],
          },
        ],
        stop_reason: 'end_turn',
        usage: { input_tokens: 10, output_tokens: 20, server_tool_use: { web_search_requests: 1 } },
      }),
      reply.text('April 2023.'),
    )
    const result = await headless(['--patch', await patch('deepseek'), 'when did node 20 come out'])
    expect(result.stdout.trim()).toBe('April 2023.')
    expect(result.code).toBe(0)

    const tool = mock.requests[0]?.body.tools.find(
      (t: { function: { name: string } }) => t.function.name === 'web_search',
    )
    expect(tool.function.parameters).toEqual({
      type: 'object',
      properties: {
        queries: {
          type: 'array',
          description: 'Required search queries; accepts 1–4 items and merges their results.',
          items: { type: 'string' },
        },
      },
      required: ['queries'],
    })
    const [sent] = searchRequests()
    expect(sent?.path).toBe('/anthropic/v1/messages')
    expect(sent?.headers['x-api-key']).toBe('sk-test-key')
    expect(sent?.headers['anthropic-version']).toBe('2023-06-01')
    expect(sent?.body.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }])
    expect(sent?.body.messages[0].content).toContain('node 20 release date')
    expect(toolTexts(lastModelRequest())).toEqual([
      [
        'Node.js 20 came out on 18 April 2023.',
        '',
        'Sources:',
        '- [Node.js 20 is now available](https://nodejs.org/en/blog/announcements/v20-release-announce) — ' +
          'Node.js 20 was released today. (April 18, 2023)',
        '',
        'Cite the sources you use by their URL.',
      ].join('\n'),
    ])
  })

  it('searches Exa with EXA_API_KEY, merging two queries by rank and each URL once', async () => {
    const exa = (results: Array<[string, string, string]>) =>
      json({
        requestId: 'r',
        results: results.map(([title, url, highlight]) => ({
          title,
          url,
          publishedDate: '2025-01-02T00:00:00.000Z',
          highlights: [highlight],
        })),
      })
    // The two searches run at once: each answers by its query, whichever comes first.
    const byQuery = async (request: RecordedRequest) =>
      request.body.query === 'rust async'
        ? exa([
            ['Async Book', 'https://rust-lang.github.io/async-book/', 'Async in Rust.'],
            ['Tokio', 'https://tokio.rs/', 'A runtime.'],
          ])
        : exa([
            ['Tokio', 'https://tokio.rs/', 'A runtime.'],
            ['Tokio docs', 'https://docs.rs/tokio', 'API docs.'],
          ])
    mock.enqueue(search('rust async', 'tokio runtime'), byQuery, byQuery, reply.text('Use tokio.'))
    const result = await headless(['--patch', await patch('exa'), 'rust async?'], { EXA_API_KEY: 'exa-key' })
    expect(result.code).toBe(0)
    const sent = searchRequests()
    expect(sent.map((r) => r.path)).toEqual(['/exa/search', '/exa/search'])
    expect(sent.map((r) => r.body.query).sort()).toEqual(['rust async', 'tokio runtime'])
    expect(sent[0]?.headers['x-api-key']).toBe('exa-key')
    expect(sent[0]?.body).toMatchObject({ type: 'auto', numResults: 8 })
    expect(toolTexts(lastModelRequest())[0]).toBe(
      [
        'Sources:',
        '- [Async Book](https://rust-lang.github.io/async-book/) — Async in Rust. (2025-01-02)',
        '- [Tokio](https://tokio.rs/) — A runtime. (2025-01-02)',
        '- [Tokio docs](https://docs.rs/tokio) — API docs. (2025-01-02)',
        '',
        'Cite the sources you use by their URL.',
      ].join('\n'),
    )
  })

  it('searches Perplexity with its answer and search results', async () => {
    mock.enqueue(
      search('weather in Paris'),
      json({
        id: 'p1',
        model: 'sonar',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Mild and cloudy [1].' }, finish_reason: 'stop' }],
        citations: ['https://weather.example/paris'],
        search_results: [{ title: 'Paris weather', url: 'https://weather.example/paris', date: '2025-05-01' }],
      }),
      reply.text('Cloudy.'),
    )
    const result = await headless(['--patch', await patch('perplexity'), 'paris weather'], {
      PERPLEXITY_API_KEY: 'pplx-key',
    })
    expect(result.code).toBe(0)
    const [sent] = searchRequests()
    expect(sent?.headers.authorization).toBe('Bearer pplx-key')
    expect(sent?.body).toEqual({
      model: 'sonar',
      messages: [{ role: 'user', content: 'weather in Paris' }],
      max_tokens: 1024,
    })
    expect(toolTexts(lastModelRequest())[0]).toBe(
      [
        'Mild and cloudy [1].',
        '',
        'Sources:',
        '- [Paris weather](https://weather.example/paris) (2025-05-01)',
        '',
        'Cite the sources you use by their URL.',
      ].join('\n'),
    )
  })

  it('tells the model about a refused key, an empty quota, a missing key and a search that took too long', async () => {
    mock.enqueue(search('a'), reply.error(401, { message: 'Invalid API key' }), reply.text('ok'))
    await headless(['--patch', await patch('exa'), 'go'], { EXA_API_KEY: 'bad' })
    expect(toolTexts(lastModelRequest())[0]).toBe(
      'Error: Exa refused the API key (HTTP 401: Invalid API key). Check the key in EXA_API_KEY.',
    )

    mock.reset()
    mock.enqueue(search('a'), reply.error(402, { message: 'Insufficient credits' }), reply.text('ok'))
    await headless(['--patch', await patch('perplexity'), 'go'], { PERPLEXITY_API_KEY: 'k' })
    expect(toolTexts(lastModelRequest())[0]).toBe(
      'Error: Perplexity says the account has no balance or quota left (HTTP 402: Insufficient credits). ' +
        'Top up the account or use another provider.',
    )

    mock.reset()
    mock.enqueue(search('a'), reply.text('ok'))
    await headless(['--patch', await patch('exa'), 'go'], { EXA_API_KEY: undefined })
    expect(toolTexts(lastModelRequest())[0]).toMatch(/^Error: Exa has no API key: set EXA_API_KEY in the environment/)
    expect(searchRequests()).toHaveLength(0)

    mock.reset()
    const slow = await patch('deepseek', ['- id: tool-web-search', '  config: { searchTimeoutMs: 300 }'])
    mock.enqueue(search('a'), json({ content: [] }, { delayMs: 30_000 }), reply.text('ok'))
    await headless(['--patch', slow, 'go'])
    expect(toolTexts(lastModelRequest())[0]).toBe('Error: tool "web_search" timed out after 300ms and was stopped.')
  })

  it('refuses a loopback search endpoint unless the web config allows it, and more queries than the limit', async () => {
    const strictPatch = path.join(root, 'strict.yml')
    await writeFile(strictPatch, `- id: web-search-exa\n  config: { baseURL: "${mock.url}/exa" }\n`)
    mock.enqueue(search('a'), reply.text('ok'))
    await headless(['--patch', strictPatch, 'go'], { DSH_WEB_SEARCH_PROVIDER: 'exa', EXA_API_KEY: 'k' })
    expect(toolTexts(lastModelRequest())[0]).toBe(
      `Error: Exa's endpoint ${mock.url} is not a public address: loopback. ` +
        'The user can allow it in the web config (allowPrivate or allowHosts).',
    )
    expect(searchRequests()).toHaveLength(0)

    mock.reset()
    mock.enqueue(search('1', '2', '3', '4', '5'), reply.text('ok'))
    await headless(['--patch', await patch('exa'), 'go'], { EXA_API_KEY: 'k' })
    expect(toolTexts(lastModelRequest())[0]).toBe(
      'Error: queries takes at most 4 queries per call, got 5; split them over several calls',
    )
  })
})
