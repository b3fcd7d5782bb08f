import { Context } from '@dsh/cordis'
import { json, type MockLlm, reply, startMockLlm } from '@dsh/llm-mock'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as web from '../src/index.ts'

let mock: MockLlm
let root: Context
beforeEach(async () => {
  mock = await startMockLlm({ routes: (method) => method === 'POST' })
  root = new Context()
})
afterEach(async () => {
  await root.fiber.dispose()
  await mock.close()
})

async function load(config: Partial<web.WebConfig> = {}) {
  await root.plugin(web, config as web.WebConfig)
}

const post = (url: string) =>
  root.web.postJson(new URL(url), {
    label: 'Test search',
    keyEnv: 'TEST_KEY',
    headers: { 'x-api-key': 'k' },
    body: { query: 'q' },
    signal: new AbortController().signal,
  })

describe('ctx.web', () => {
  it('serves the configured provider and forgets it when the registering plugin is disposed', async () => {
    await load({ searchProvider: 'fake' })
    const fiber = root.plugin({
      name: 'fake-search',
      inject: ['web'],
      apply(ctx: Context) {
        ctx.web.registerSearchProvider(ctx, 'fake', {
          label: 'Fake',
          search: async (request) => ({ sources: [{ title: request.query, url: 'https://example.com/' }] }),
        })
      },
    })
    await fiber
    const found = await root.web.search({ query: 'hello', maxResults: 3, signal: new AbortController().signal })
    expect(found).toEqual({ provider: 'fake', sources: [{ title: 'hello', url: 'https://example.com/' }] })
    await fiber.dispose()
    expect(root.web.searchProviders()).toEqual([])
    expect(() => root.web.searchProvider()).toThrow(
      'the web search provider "fake" is not loaded (loaded: none); set searchProvider in the web config',
    )
  })

  it('refuses a host name that resolves to loopback, and reaches it once allowHosts names it', async () => {
    await load()
    const target = `http://localhost:${mock.port}/search`
    await expect(post(target)).rejects.toMatchObject({
      code: 'WEB_SEARCH_BLOCKED_ADDRESS',
      message: expect.stringMatching(
        new RegExp(
          `^Test search's endpoint http://localhost:${mock.port} is not a public address: loopback \\(localhost resolves to (127\\.0\\.0\\.1|::1)\\)`,
        ),
      ),
    })
    expect(mock.requests).toHaveLength(0)

    await root.fiber.dispose()
    root = new Context()
    await load({ allowHosts: ['localhost'] })
    mock.enqueue(json({ ok: true }))
    await expect(post(target)).resolves.toEqual({ ok: true })
  })

  it('refuses private IP literals without resolving anything', async () => {
    await load()
    await expect(post('http://169.254.169.254/latest')).rejects.toMatchObject({ code: 'WEB_SEARCH_BLOCKED_ADDRESS' })
    await expect(post('http://[::ffff:10.0.0.1]/x')).rejects.toThrow(/is not a public address: private/)
  })

  it('maps HTTP errors by status and names the key variable', async () => {
    await load({ allowPrivate: true })
    mock.enqueue(reply.error(429, { message: 'slow down' }), json('not an object'))
    await expect(post(`${mock.url}/s`)).rejects.toMatchObject({ code: 'WEB_SEARCH_RATE_LIMIT' })
    await expect(post(`${mock.url}/s`)).resolves.toBe('not an object')
  })
})
