import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { HttpError, JsonReply, type LocalHttpOptions, LocalHttpServer } from '../src/index.ts'

declare module '@dsh/cordis' {
  interface Context {
    http: TestServer
  }
}

/** A surface's server as the package is meant to be used: a subclass provided under the surface's name. */
class TestServer extends LocalHttpServer {
  constructor(ctx: Context, options: LocalHttpOptions) {
    super(ctx, 'http', options)
  }
}

let dir: string
let dist: string

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'dsh-local-http-'))
  dist = path.join(dir, 'dist')
  await mkdir(path.join(dist, 'assets'), { recursive: true })
  await writeFile(path.join(dist, 'index.html'), '<!doctype html><title>app</title>')
  await writeFile(path.join(dist, 'assets', 'main-3f2a.js'), 'console.log(1)')
  await writeFile(path.join(dist, 'assets', 'main-3f2a.css'), 'body{}')
  await writeFile(path.join(dir, 'secret.txt'), 'outside the dist')
})

afterAll(() => rm(dir, { recursive: true, force: true }))

let root: Context
let base: string

const BUILD = 'pnpm --filter @dsh/web-ui build'

const options = (changes: Partial<LocalHttpOptions> = {}): LocalHttpOptions => ({
  label: 'dsh web',
  host: '127.0.0.1',
  port: 0,
  trustedHosts: [],
  maxBodyBytes: 4096,
  app: { dir: dist, buildCommand: BUILD },
  ...changes,
})

async function start(changes: Partial<LocalHttpOptions> = {}): Promise<void> {
  root = new Context()
  await root.plugin(TestServer, options(changes))
  base = `http://127.0.0.1:${root.http.port}`
}

beforeEach(() => start())
afterEach(() => root.fiber.dispose())

/** Registers routes from a plugin of their own, which the test can dispose. */
async function routesPlugin(register: (ctx: Context) => void) {
  return root.plugin({ name: 'routes', inject: ['http'], apply: register })
}

const json = async (res: Response): Promise<{ status: number; body: any }> => ({
  status: res.status,
  body: await res.json(),
})

describe('routes', () => {
  it('dispatches with params, query and JSON bodies; other statuses via JsonReply', async () => {
    await routesPlugin((ctx) => {
      ctx.http.route(ctx, 'GET', '/api/things/:id', (r) => ({ id: r.params.id, q: r.query.get('q') }))
      ctx.http.route(ctx, 'POST', '/api/things', async (r) => new JsonReply(201, { got: await r.body() }))
    })
    expect(await json(await fetch(`${base}/api/things/a%20b?q=1`))).toEqual({
      status: 200,
      body: { id: 'a b', q: '1' },
    })
    const created = await fetch(`${base}/api/things`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"x":1}',
    })
    expect(await json(created)).toEqual({ status: 201, body: { got: { x: 1 } } })
  })

  it('answers unknown routes 404, wrong methods 405 with Allow, and handler errors with their code', async () => {
    await routesPlugin((ctx) => {
      ctx.http.route(ctx, 'GET', '/api/x', () => {
        throw new HttpError(409, 'busy', 'x is busy')
      })
      ctx.http.route(ctx, 'GET', '/api/crash', () => {
        throw new Error('kaboom')
      })
    })
    expect(await json(await fetch(`${base}/api/nope`))).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'no API route GET /api/nope' } },
    })
    const wrong = await fetch(`${base}/api/x`, { method: 'DELETE' })
    expect(wrong.headers.get('allow')).toBe('GET')
    expect((await json(wrong)).body.error.code).toBe('method-not-allowed')
    expect(await json(await fetch(`${base}/api/x`))).toEqual({
      status: 409,
      body: { error: { code: 'busy', message: 'x is busy' } },
    })
    expect(await json(await fetch(`${base}/api/crash`))).toMatchObject({
      status: 500,
      body: { error: { code: 'internal', message: 'GET /api/crash failed: kaboom' } },
    })
  })

  it('removes the routes of a disposed plugin', async () => {
    const fiber = await routesPlugin((ctx) => {
      ctx.http.route(ctx, 'GET', '/api/temp', () => ({ ok: true }))
      ctx.http.upgrade(ctx, '/api/temp-ws', (_req, socket) => socket.end())
    })
    expect((await fetch(`${base}/api/temp`)).status).toBe(200)
    expect((await fetch(`${base}/api/temp-ws`)).status).toBe(426)
    await fiber.dispose()
    expect((await fetch(`${base}/api/temp`)).status).toBe(404)
    expect((await fetch(`${base}/api/temp-ws`)).status).toBe(404)
  })

  it('refuses a second registration of the same route', async () => {
    await routesPlugin((ctx) => ctx.http.route(ctx, 'GET', '/api/one', () => ({})))
    expect(() => root.http.route(root, 'GET', '/api/one', () => ({}))).toThrow(
      'HTTP route "GET /api/one" is already registered',
    )
  })
})

describe('bodies', () => {
  beforeEach(() =>
    routesPlugin((ctx) => ctx.http.route(ctx, 'POST', '/api/echo', async (r) => ({ body: (await r.body()) ?? null }))),
  )
  const post = (body: string, type = 'application/json') =>
    fetch(`${base}/api/echo`, { method: 'POST', headers: { 'content-type': type }, body })

  it('reads JSON, and no body as null', async () => {
    expect((await json(await post('{"a":[1]}'))).body).toEqual({ body: { a: [1] } })
    expect((await json(await fetch(`${base}/api/echo`, { method: 'POST' }))).body).toEqual({ body: null })
  })

  it('answers malformed JSON with 400 bad-json', async () => {
    const { status, body } = await json(await post('{"a":'))
    expect(status).toBe(400)
    expect(body.error.code).toBe('bad-json')
    expect(body.error.message).toMatch(/^the request body is not valid JSON/)
  })

  it('answers a body over the limit with 413 too-large', async () => {
    const { status, body } = await json(await post(JSON.stringify({ pad: 'x'.repeat(5000) })))
    expect(status).toBe(413)
    expect(body.error).toMatchObject({ code: 'too-large' })
    expect(body.error.message).toContain('4096 bytes (maxBodyBytes)')
  })

  it('answers a body that is not JSON content with 415', async () => {
    expect((await json(await post('a=1', 'application/x-www-form-urlencoded'))).body.error.code).toBe(
      'unsupported-media-type',
    )
  })
})

describe('static app', () => {
  it('serves files with content types and cache headers, falling back to index.html for app routes', async () => {
    const index = await fetch(`${base}/`)
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(index.headers.get('cache-control')).toBe('no-cache')
    expect(await index.text()).toContain('<title>app</title>')
    const script = await fetch(`${base}/assets/main-3f2a.js`)
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect((await fetch(`${base}/assets/main-3f2a.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8')
    const route = await fetch(`${base}/sessions/abc`)
    expect(route.status).toBe(200)
    expect(await route.text()).toContain('<title>app</title>')
    expect((await fetch(`${base}/assets/missing.js`)).status).toBe(404)
    expect((await fetch(`${base}/`, { method: 'POST' })).status).toBe(405)
  })

  it('never serves files outside the app folder', async () => {
    for (const probe of ['/../secret.txt', '/%2e%2e/secret.txt', '/assets/..%2f..%2fsecret.txt']) {
      const res = await fetch(`${base}${probe}`)
      expect(await res.text()).not.toContain('outside the dist')
    }
  })

  it('explains a missing build and how to fix it', async () => {
    await root.fiber.dispose()
    await start({ app: { dir: path.join(dir, 'no-build'), buildCommand: BUILD } })
    const res = await fetch(`${base}/any/page`)
    expect(res.status).toBe(503)
    expect(await res.text()).toContain(BUILD)
  })

  it('answers only /api without an app', async () => {
    await root.fiber.dispose()
    const { app: _none, ...apiOnly } = options()
    root = new Context()
    await root.plugin(TestServer, apiOnly)
    const res = await fetch(`http://127.0.0.1:${root.http.port}/index.html`)
    expect(res.status).toBe(404)
    expect((await json(res)).body.error.message).toBe('no API route GET /index.html; this server only answers /api')
  })
})

describe('lifecycle', () => {
  it('closes the server and open connections on dispose', async () => {
    const port = root.http.port as number
    const socket = connect(port, '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    const closed = new Promise((resolve) => socket.once('close', resolve))
    await root.fiber.dispose()
    await closed
    await expect(fetch(`http://127.0.0.1:${port}/api/info`)).rejects.toThrow()
    await start()
  })

  it('fails to start with a clear message when the port is taken', async () => {
    const taken = root.http.port as number
    const other = new Context()
    await expect(other.plugin(TestServer, options({ port: taken }))).rejects.toThrow(
      /dsh web cannot listen on 127\.0\.0\.1:\d+: .*--port 0/,
    )
  })
})
