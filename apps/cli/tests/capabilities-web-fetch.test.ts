import { writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { type RecordedRequest, reply } from '@dsh/llm-mock'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'

const t = useMockedHeadless()

let server: Server
let url = ''
beforeAll(async () => {
  server = createServer((req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        req.url === '/entities'
          ? '<html><head><title>Tom &amp; Jerry &mdash; caf&eacute; &#x1F600; &lt;3&hellip;</title></head><body>x</body></html>'
          : '<html><head><title>Local page</title></head><body><h2>Deploy code</h2><p>It is <b>4711</b>.</p></body></html>',
      )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/notes`
})
afterAll(() => new Promise((resolve) => server.close(resolve)))

const lastTool = (req: RecordedRequest | undefined) =>
  String(
    ((req?.body as { messages: { role: string; content: string }[] }).messages ?? [])
      .filter((m) => m.role === 'tool')
      .at(-1)?.content,
  )

function script(target: string) {
  t.mock.enqueue(reply.toolCalls([{ name: 'web_fetch', arguments: { url: target } }]), reply.text('Noted.'))
}

describe('web_fetch through the headless app', () => {
  it('needs the network permission: under workspace-write with the network off, headless denies it', async () => {
    script('https://example.com/')
    const result = await t.headless(['fetch the page'])
    expect(result.code).toBe(0)
    expect(t.mock.requests[0]?.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toContain(
      'web_fetch',
    )
    expect(lastTool(t.mock.requests[1])).toMatch(
      /^Error: .*web_fetch.*needs network access \(fetch https:\/\/example\.com\/\)/,
    )
  })

  it('refuses a loopback address by default and fetches it as Markdown when the config allows private addresses', async () => {
    const full = { DSH_PERMISSION_MODE: 'danger-full-access' }
    script(url)
    expect((await t.headless(['fetch the page'], full)).code).toBe(0)
    expect(lastTool(t.mock.requests[1])).toMatch(
      /^Error: http:\/\/127\.0\.0\.1:\d+ is not a public address: loopback\./,
    )

    const patch = path.join(t.root, 'allow-private.yml')
    await writeFile(patch, '- id: web-fetch\n  config:\n    allowPrivate: true\n')
    script(url)
    expect((await t.headless(['--patch', patch, 'fetch the page'], full)).code).toBe(0)
    expect(lastTool(t.mock.requests[3])).toBe(
      `Fetched ${url} (HTTP 200, text/html, 109 bytes)\n\n# Local page\n\n## Deploy code\n\nIt is **4711**.`,
    )
  })

  it('decodes every HTML entity in the page title (named, numeric, hexadecimal)', async () => {
    const patch = path.join(t.root, 'allow-private.yml')
    await writeFile(patch, '- id: web-fetch\n  config:\n    allowPrivate: true\n')
    script(new URL('/entities', url).href)
    const result = await t.headless(['--patch', patch, 'fetch the page'], { DSH_PERMISSION_MODE: 'danger-full-access' })
    expect(result.code).toBe(0)
    expect(lastTool(t.mock.requests[1])).toMatch(/\n\n# Tom & Jerry \u2014 caf\u00e9 \u{1F600} <3\u2026\n\nx$/u)
  })

  it('refuses IPv6 forms that carry a non-public IPv4 address, saying which one', async () => {
    const targets: Array<[string, string]> = [
      ['http://[2002:7f00:1::]/', 'loopback, as 127.0.0.1 inside a 6to4 address'],
      ['http://[::ffff:0:127.0.0.1]/', 'loopback, as 127.0.0.1 inside an IPv4-translated (SIIT) address'],
      ['http://[64:ff9b:1::7f00:1]/', 'loopback, as 127.0.0.1 (embedded for a /96 prefix) inside a NAT64 address'],
      // Teredo: the client is the last 32 bits XOR 0xffffffff: 0x80fffffe ^ 0xffffffff = 0x7f000001.
      [
        'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/',
        'loopback, as 127.0.0.1 (Teredo client) inside a Teredo address',
      ],
      ['http://[64:ff9b::a00:1]/', 'private (RFC 1918), as 10.0.0.1 inside a NAT64 address'],
    ]
    t.mock.enqueue(
      reply.toolCalls(
        targets.map(([target], i) => ({ id: `call_${i}`, name: 'web_fetch', arguments: { url: target } })),
      ),
      reply.text('None of them.'),
    )
    expect((await t.headless(['fetch these'], { DSH_PERMISSION_MODE: 'danger-full-access' })).code).toBe(0)
    const results = (
      t.mock.requests[1]?.body as { messages: Array<{ role: string; tool_call_id: string; content: string }> }
    ).messages.filter((m) => m.role === 'tool')
    expect(results).toHaveLength(targets.length)
    targets.forEach(([target, reason], i) => {
      const result = results.find((m) => m.tool_call_id === `call_${i}`)?.content
      expect(result).toBe(
        `Error: ${new URL(target).origin} is not a public address: ${reason}. web_fetch only reaches public internet addresses; ` +
          'the user can allow others in the web-fetch config (allowPrivate or allowHosts).',
      )
    })
  })
})
