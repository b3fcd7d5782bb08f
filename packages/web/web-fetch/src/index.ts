import type { Context, JsonValue } from '@dsh/cordis'
import type { SpillStore } from '@dsh/spill'
import {
  defineTool,
  oneLine,
  textArgument,
  type ToolDefinition,
  ToolError,
  type ToolOutput,
  type ToolRunContext,
  toolParameters,
} from '@dsh/tools'
import { z } from 'zod'
import { Config, type WebFetchConfig } from './config.ts'
import { convertHtml } from './convert.ts'
import { type BodyKind, type Fetched, fetchGuarded, kindOfType } from './fetch.ts'
import { parseTarget, type Resolver, systemResolver } from './guard.ts'

export { Config, type WebFetchConfig }
export { classifyAddress, isPublicAddress, nonPublicReason } from '@dsh/address-rules'
export { convertHtml } from './convert.ts'
export type { ResolvedAddress, Resolver } from './guard.ts'

export const name = 'web-fetch'
export const inject = ['tools']

const parameters = toolParameters(
  z.object({
    url: z.string().min(1).describe('The http or https URL to fetch.'),
  }),
)

/** What the page is, deciding from the first bytes when the server named no type. */
function sniff(fetched: Fetched): BodyKind {
  const declared = fetched.mime ? kindOfType(fetched.mime) : undefined
  const head = fetched.body.subarray(0, 8192)
  if (head.includes(0)) {
    throw new ToolError(
      'WEB_UNSUPPORTED_CONTENT',
      `${fetched.url.href} looks binary${fetched.mime ? ` although it says ${fetched.mime}` : ''}; web_fetch reads HTML and text pages only`,
    )
  }
  if (declared) return declared
  return /^\s*(<!doctype html|<html)/i.test(head.toString('latin1')) ? 'html' : 'text'
}

function decode(fetched: Fetched, kind: BodyKind): string {
  const meta =
    kind === 'html'
      ? /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(fetched.body.subarray(0, 2048).toString('latin1'))?.[1]
      : undefined
  for (const label of [fetched.charset, meta, 'utf-8']) {
    if (!label) continue
    try {
      return new TextDecoder(label).decode(fetched.body)
    } catch {
      // an unknown label: try the next
    }
  }
  return fetched.body.toString('utf8')
}

function statusLine(fetched: Fetched): string[] {
  const lines = [
    `Fetched ${fetched.url.href} (HTTP ${fetched.status}${fetched.mime ? `, ${fetched.mime}` : ''}, ${fetched.body.length} bytes)`,
  ]
  if (fetched.redirects.length) lines.push(`Redirected from ${fetched.redirects.map((u) => u.href).join(' -> ')}`)
  return lines
}

/** The `web_fetch` tool. `resolve` looks host names up (tests replace it); connections go to the address it returned. */
export function createWebFetchTool(
  ctx: Context,
  config: WebFetchConfig,
  resolve: Resolver = systemResolver,
): ToolDefinition<typeof parameters> {
  const spillStore = () => ctx.get('spill' as string) as SpillStore | undefined

  async function cut(text: string, run: ToolRunContext, meta: Record<string, JsonValue>): Promise<string> {
    const head = `(Showing the first ${config.maxOutputChars} of ${text.length} characters.`
    const store = spillStore()
    if (!store) return `${head})`
    try {
      const saved = await store.save({ sessionId: run.sessionId, text, label: 'web-fetch' })
      meta.spilled = saved.path
      return `${head} The whole page is saved at ${saved.path}; page through it with the read tool.)`
    } catch (error) {
      if (run.signal.aborted) throw error
      return `${head} Saving the whole page failed: ${error instanceof Error ? error.message : String(error)}.)`
    }
  }

  return defineTool({
    name: 'web_fetch',
    presentation: {
      kind: 'fetch',
      view: 'web',
      title: (args) => `Fetch ${oneLine(textArgument(args, 'url') ?? 'a page')}`,
      locations: () => [],
    },
    description:
      'Fetch a public web page over http(s) and return it as Markdown (HTML pages), or as it is (text, JSON, XML). ' +
      'Redirects are followed. Other content (images, PDFs, binaries) is refused. Loopback, private-network and ' +
      `cloud-metadata addresses are refused unless the user allowed them. Bodies are cut at ${config.maxBytes} bytes and ` +
      `the result at ${config.maxOutputChars} characters.`,
    parameters,
    timeoutMs: config.timeoutMs,
    readOnly: true,
    isConcurrencySafe: () => true,
    access: (args) => ({ kind: 'network', summary: `fetch ${args.url}`, urls: [args.url] }),
    async execute(args, run): Promise<ToolOutput> {
      const start = parseTarget(args.url.trim(), config.maxUrlLength)
      const limits = config
      const guard = {
        allowPrivate: config.allowPrivate,
        allowHosts: config.allowHosts,
        maxUrlLength: config.maxUrlLength,
        resolve,
      }
      const fetched = await fetchGuarded(start, guard, limits, run.signal)
      const kind = sniff(fetched)
      const source = decode(fetched, kind)
      const text = kind === 'html' ? convertHtml(source) : source
      const meta: Record<string, JsonValue> = {
        url: start.href,
        finalUrl: fetched.url.href,
        status: fetched.status,
        contentType: fetched.mime || null,
        bytes: fetched.body.length,
        truncated: fetched.truncated,
      }
      const notes: string[] = []
      if (fetched.truncated)
        notes.push(
          `(The body is longer than ${limits.maxBytes} bytes, or endless; only the first ${limits.maxBytes} bytes were read.)`,
        )
      let shown = text
      if (text.length > config.maxOutputChars) {
        shown = text.slice(0, config.maxOutputChars)
        notes.push(await cut(text, run, meta))
      }
      const content = [
        ...statusLine(fetched),
        '',
        shown || '(empty body)',
        ...(notes.length ? ['', ...notes] : []),
      ].join('\n')
      const ok = fetched.status >= 200 && fetched.status < 400
      return ok ? { content, meta } : { content, isError: true, code: 'WEB_HTTP_ERROR', meta }
    },
  })
}

/** Registers `web_fetch` on `ctx.tools`; large pages spill through `ctx.spill` when it is mounted. */
export function apply(ctx: Context, config: WebFetchConfig) {
  ctx.tools.register(ctx, createWebFetchTool(ctx, config))
}
