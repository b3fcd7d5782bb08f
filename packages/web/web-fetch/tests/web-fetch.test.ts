import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import * as spillPlugin from '@dsh/spill'
import * as toolsPlugin from '@dsh/tools'
import type { ToolResult, ToolsConfig } from '@dsh/tools'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import * as webFetch from '../src/index.ts'
import { createWebFetchTool, type Resolver, type WebFetchConfig } from '../src/index.ts'

const PAGE = `<!doctype html><html><head><title>Test &amp; page</title><style>body{color:red}</style><script>alert("x")</script></head>
<body><h1>Welcome</h1><p>Some <strong>bold</strong> text and a <a href="https://example.com/next">link</a>.</p>
<ul><li>one</li><li>two</li></ul><img src="a.png" alt="a picture"></body></html>`

let server: Server
let port = 0
const sockets = new Set<import('node:net').Socket>()

function route(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/'
  if (url === '/page') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE)
  } else if (url === '/text') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('plain *text* [kept]')
  } else if (url === '/json') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
  } else if (url === '/image') {
    res
      .writeHead(200, { 'content-type': 'image/png', 'content-length': '4' })
      .end(Buffer.from([0x89, 0x50, 0x4e, 0x47]))
  } else if (url === '/gzip') {
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(gzipSync(PAGE))
  } else if (url === '/latin1') {
    res.writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' }).end(Buffer.from([0x63, 0x61, 0x66, 0xe9]))
  } else if (url === '/missing') {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page')
  } else if (url === '/long') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(5000))
  } else if (url === '/endless') {
    res.writeHead(200, { 'content-type': 'text/plain' })
    const chunk = 'endless '.repeat(1024)
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) {
        // keep writing until the socket pushes back
      }
      if (!res.destroyed) res.once('drain', pump)
    }
    pump()
  } else if (url === '/silent') {
    // headers never come
  } else if (url === '/stall-body') {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('the start of a body that never ends')
  } else if (url === '/redirect-loopback') {
    res.writeHead(302, { location: `http://127.0.0.1:${port}/page` }).end()
  } else if (url === '/redirect-relative') {
    res.writeHead(301, { location: '/text' }).end()
  } else if (url === '/redirect-loop') {
    res.writeHead(302, { location: '/redirect-loop' }).end()
  } else {
    res.writeHead(500).end()
  }
}

beforeAll(async () => {
  server = createServer(route)
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
})

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await new Promise((resolve) => server.close(resolve))
})

const base = (): WebFetchConfig => ({
  timeoutMs: 20_000,
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 5_000,
  bodyTimeoutMs: 5_000,
  maxBytes: 1024 * 1024,
  maxOutputChars: 100_000,
  maxRedirects: 5,
  maxUrlLength: 2048,
  allowPrivate: true,
  allowHosts: [],
  userAgent: 'dsh-test',
})

interface Mounted {
  root: Context
  spillRoot: string
  fetch(args: Record<string, unknown>): Promise<ToolResult>
}

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})

let calls = 0
async function mount(
  config: Partial<WebFetchConfig> = {},
  options: { resolve?: Resolver; spill?: boolean } = {},
): Promise<Mounted> {
  const root = new Context()
  const spillRoot = await mkdtemp(path.join(tmpdir(), 'dsh-web-fetch-'))
  await root.plugin(toolsPlugin, {} as ToolsConfig)
  if (options.spill) await root.plugin(spillPlugin, { root: path.join(spillRoot, 'spill'), keepOnDispose: false })
  const settings = { ...base(), ...config }
  if (options.resolve) {
    const resolve = options.resolve
    await root.plugin({
      name: 'web-fetch-test',
      inject: ['tools'],
      apply: (ctx: Context) => void ctx.tools.register(ctx, createWebFetchTool(ctx, settings, resolve)),
    })
  } else await root.plugin(webFetch, settings)
  cleanups.push(async () => {
    await root.fiber.dispose()
    await rm(spillRoot, { recursive: true, force: true })
  })
  const session = {
    signal: new AbortController().signal,
    cwd: spillRoot,
    sessionId: 'web-fetch-session',
    sessionState: new Map(),
  }
  return {
    root,
    spillRoot,
    fetch: (args) =>
      root.tools.execute(
        { callId: `c${++calls}` as ToolCallId, name: 'web_fetch', arguments: JSON.stringify(args) },
        session,
      ),
  }
}

const text = (result: ToolResult) => result.content.map((b) => (b.type === 'text' ? b.text : '')).join('')

describe('web_fetch', () => {
  it('turns an HTML page into Markdown without scripts or styles', async () => {
    const { fetch } = await mount()
    const result = await fetch({ url: `http://127.0.0.1:${port}/page` })
    expect(result.isError).toBe(false)
    const out = text(result)
    expect(out).toMatch(
      new RegExp(
        `^Fetched http://127\\.0\\.0\\.1:${port}/page \\(HTTP 200, text/html, \\d+ bytes\\)\n\n# Test & page\n`,
      ),
    )
    expect(out.match(/Test & page/g)).toHaveLength(1)
    expect(out).toContain('# Welcome')
    expect(out).toContain('Some **bold** text and a [link](https://example.com/next).')
    expect(out).toMatch(/- {1,3}one\n- {1,3}two/)
    expect(out).not.toContain('alert')
    expect(out).not.toContain('color:red')
    expect(result.meta).toMatchObject({ status: 200, contentType: 'text/html', truncated: false })
  })

  it('passes text and JSON through, decodes gzip and the declared charset', async () => {
    const { fetch } = await mount()
    expect(text(await fetch({ url: `http://127.0.0.1:${port}/text` }))).toMatch(/\n\nplain \*text\* \[kept\]$/)
    expect(text(await fetch({ url: `http://127.0.0.1:${port}/json` }))).toMatch(/application\/json.*\n\n\{"ok":true\}$/)
    expect(text(await fetch({ url: `http://127.0.0.1:${port}/gzip` }))).toContain('Some **bold** text')
    expect(text(await fetch({ url: `http://127.0.0.1:${port}/latin1` }))).toMatch(/café$/)
  })

  it('refuses images and other binary types with a readable error', async () => {
    const { fetch } = await mount()
    const result = await fetch({ url: `http://127.0.0.1:${port}/image` })
    expect(result.isError).toBe(true)
    expect(result.error?.code).toBe('WEB_UNSUPPORTED_CONTENT')
    expect(text(result)).toBe(
      `Error: http://127.0.0.1:${port}/image is image/png (4 bytes); web_fetch reads HTML and text pages only`,
    )
  })

  it('reports a 404 as an error result that still shows the page', async () => {
    const { fetch } = await mount()
    const result = await fetch({ url: `http://127.0.0.1:${port}/missing` })
    expect(result.isError).toBe(true)
    expect(result.error?.code).toBe('WEB_HTTP_ERROR')
    expect(text(result)).toMatch(/HTTP 404.*\n\nno such page$/)
  })

  it('cuts an endless body at the size cap and says so', async () => {
    const { fetch } = await mount({ maxBytes: 50_000 })
    const result = await fetch({ url: `http://127.0.0.1:${port}/endless` })
    expect(result.isError).toBe(false)
    expect(result.meta).toMatchObject({ bytes: 50_000, truncated: true })
    expect(text(result)).toContain(
      '(The body is longer than 50000 bytes, or endless; only the first 50000 bytes were read.)',
    )
  })

  it('times out when the headers never come, and when the body stalls', async () => {
    const { fetch } = await mount({ headersTimeoutMs: 200, bodyTimeoutMs: 200 })
    const silent = await fetch({ url: `http://127.0.0.1:${port}/silent` })
    expect(silent.error?.code).toBe('WEB_TIMEOUT')
    expect(text(silent)).toBe(`Error: http://127.0.0.1:${port}/silent sent no response headers within 200 ms`)
    const stalled = await fetch({ url: `http://127.0.0.1:${port}/stall-body` })
    expect(stalled.error?.code).toBe('WEB_TIMEOUT')
    expect(text(stalled)).toContain('stopped sending its body for 200 ms')
  })

  it('follows relative redirects and names where it came from; stops redirect loops', async () => {
    const { fetch } = await mount({ maxRedirects: 3 })
    const result = await fetch({ url: `http://127.0.0.1:${port}/redirect-relative` })
    expect(text(result)).toMatch(
      new RegExp(
        `^Fetched http://127\\.0\\.0\\.1:${port}/text .*\nRedirected from http://127\\.0\\.0\\.1:${port}/redirect-relative\n`,
      ),
    )
    const loop = await fetch({ url: `http://127.0.0.1:${port}/redirect-loop` })
    expect(loop.error?.code).toBe('WEB_TOO_MANY_REDIRECTS')
  })

  it('saves a page longer than maxOutputChars through ctx.spill', async () => {
    const { fetch } = await mount({ maxOutputChars: 1000 }, { spill: true })
    const result = await fetch({ url: `http://127.0.0.1:${port}/long` })
    const out = text(result)
    expect(out).toContain(
      `${'x'.repeat(1000)}\n\n(Showing the first 1000 of 5000 characters. The whole page is saved at `,
    )
    const saved = (result.meta as { spilled: string }).spilled
    expect(readFileSync(saved, 'utf8')).toBe('x'.repeat(5000))
  })

  it('refuses other schemes and URLs carrying credentials', async () => {
    const { fetch } = await mount()
    expect(text(await fetch({ url: 'file:///etc/passwd' }))).toBe(
      'Error: file:///etc/passwd: only http and https URLs can be fetched, not file',
    )
    expect((await fetch({ url: `http://user:pw@127.0.0.1:${port}/page` })).error?.code).toBe('WEB_BLOCKED_URL')
    expect((await fetch({ url: 'not a url' })).error?.code).toBe('WEB_BAD_URL')
  })

  it('declares network access for the permission presets and goes away with its plugin', async () => {
    const root = new Context()
    await root.plugin(toolsPlugin, {} as ToolsConfig)
    const fiber = root.plugin(webFetch, base())
    await fiber
    const tool = root.tools.get('web_fetch')
    expect(tool?.access?.({ url: 'https://example.com' } as never)).toEqual({
      kind: 'network',
      summary: 'fetch https://example.com',
      urls: ['https://example.com'],
    })
    expect(tool?.readOnly).toBe(true)
    await fiber.dispose()
    expect(root.tools.get('web_fetch')).toBeUndefined()
    await root.fiber.dispose()
  })
})

describe('the address guard (allowPrivate false)', () => {
  const guarded = (config: Partial<WebFetchConfig> = {}, resolve?: Resolver) =>
    mount({ allowPrivate: false, ...config }, resolve ? { resolve } : {})

  it.each([
    ['127.0.0.1', () => `http://127.0.0.1:${port}/page`, 'loopback'],
    ['localhost', () => `http://localhost:${port}/page`, 'loopback'],
    ['the cloud metadata address', () => 'http://169.254.169.254/latest/meta-data/', 'link-local (cloud metadata)'],
    ['an IPv4-mapped IPv6 loopback', () => `http://[::ffff:127.0.0.1]:${port}/page`, 'loopback'],
    ['IPv6 loopback', () => `http://[::1]:${port}/page`, 'loopback'],
    ['a private network address', () => 'http://10.1.2.3/', 'private (RFC 1918)'],
    ['an octal-looking loopback', () => `http://0177.0.0.1:${port}/page`, 'loopback'],
  ])('refuses %s', async (_label, url, reason) => {
    const { fetch } = await guarded()
    const result = await fetch({ url: url() })
    expect(result.error?.code).toBe('WEB_BLOCKED_ADDRESS')
    expect(text(result)).toContain(`is not a public address: ${reason}`)
    expect(text(result)).toContain('allowPrivate or allowHosts')
  })

  it('refuses a redirect to 127.0.0.1 from an allowed host', async () => {
    const { fetch } = await guarded({ allowHosts: ['localhost'] })
    const allowed = await fetch({ url: `http://localhost:${port}/page` })
    expect(allowed.isError).toBe(false)
    const result = await fetch({ url: `http://localhost:${port}/redirect-loopback` })
    expect(result.error?.code).toBe('WEB_BLOCKED_ADDRESS')
    expect(text(result)).toBe(
      `Error: http://127.0.0.1:${port} is not a public address: loopback. web_fetch only reaches public internet addresses; ` +
        'the user can allow others in the web-fetch config (allowPrivate or allowHosts).',
    )
  })

  it('refuses a host when any address it resolves to is private', async () => {
    const { fetch } = await guarded({}, async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '192.168.1.10', family: 4 },
    ])
    const result = await fetch({ url: 'http://mixed.example/' })
    expect(text(result)).toContain('(mixed.example resolves to 192.168.1.10)')
  })

  it('connects to the address it checked, not to a second DNS answer', async () => {
    const asked: string[] = []
    const { fetch } = await mount(
      { allowPrivate: true },
      {
        resolve: async (host) => {
          asked.push(host)
          return [{ address: '127.0.0.1', family: 4 }]
        },
      },
    )
    // `.invalid` never resolves through the system resolver: the request can only reach the server through the pinned address.
    const result = await fetch({ url: `http://pinned.invalid:${port}/text` })
    expect(result.isError).toBe(false)
    expect(text(result)).toContain('plain *text*')
    expect(asked).toEqual(['pinned.invalid'])
  })
})
