import type { LookupFunction } from 'node:net'
import { pipeline, type Readable } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { ToolError } from '@dsh/tools'
import { Agent, request } from 'undici'
import { checkedAddress, type GuardOptions, parseTarget, type ResolvedAddress } from './guard.ts'

export interface FetchLimits {
  connectTimeoutMs: number
  headersTimeoutMs: number
  bodyTimeoutMs: number
  maxBytes: number
  maxRedirects: number
  userAgent: string
}

export type BodyKind = 'html' | 'text'

export interface Fetched {
  url: URL
  /** The URLs that redirected here, in order. */
  redirects: URL[]
  status: number
  mime: string
  charset: string | undefined
  body: Buffer
  /** The body went on past `maxBytes` and was cut there. */
  truncated: boolean
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

const TEXT_TYPES =
  /^(text\/[\w.+-]+|application\/(json|xml|javascript|ecmascript|x-javascript|x-sh|yaml|x-yaml|toml|x-ndjson|ld\+json|[\w.-]+\+(json|xml)))$/

/** Whether a media type is HTML, other text, or something web_fetch does not read. */
export function kindOfType(mime: string): BodyKind | undefined {
  if (mime === 'text/html' || mime === 'application/xhtml+xml') return 'html'
  if (TEXT_TYPES.test(mime)) return 'text'
  return undefined
}

/** Connects to the checked address whatever a later DNS answer would say. */
function pinnedLookup(pinned: ResolvedAddress): LookupFunction {
  return (_host, options, callback) => {
    if (options?.all) callback(null, [{ address: pinned.address, family: pinned.family }])
    else callback(null, pinned.address, pinned.family)
  }
}

/** Stops reading a body; undici reports the abort as an error nobody needs. */
function discard(body: Readable): void {
  body.on('error', () => {})
  body.destroy()
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

function inflaterFor(encoding: string | undefined, url: URL) {
  const name = encoding?.trim().toLowerCase()
  if (!name || name === 'identity') return undefined
  if (name === 'gzip' || name === 'x-gzip') return createGunzip()
  if (name === 'deflate') return createInflate()
  if (name === 'br') return createBrotliDecompress()
  throw new ToolError(
    'WEB_UNSUPPORTED_CONTENT',
    `${url.href} was sent with content encoding "${name}", which web_fetch cannot decode`,
  )
}

function failed(error: unknown, url: URL, limits: FetchLimits, signal: AbortSignal): never {
  if (signal.aborted || error instanceof ToolError) throw error
  const err = error as { code?: string; message?: string; cause?: { code?: string; message?: string } }
  const code = err.code ?? err.cause?.code ?? ''
  const detail = err.cause?.message ?? err.message ?? String(error)
  if (code === 'UND_ERR_CONNECT_TIMEOUT')
    throw new ToolError('WEB_TIMEOUT', `${url.origin} did not accept a connection within ${limits.connectTimeoutMs} ms`)
  if (code === 'UND_ERR_HEADERS_TIMEOUT')
    throw new ToolError('WEB_TIMEOUT', `${url.href} sent no response headers within ${limits.headersTimeoutMs} ms`)
  if (code === 'UND_ERR_BODY_TIMEOUT')
    throw new ToolError('WEB_TIMEOUT', `${url.href} stopped sending its body for ${limits.bodyTimeoutMs} ms`)
  if (code === 'ECONNREFUSED') throw new ToolError('WEB_CONNECT_FAILED', `${url.origin} refused the connection`)
  if (/CERT|SSL|TLS/i.test(code))
    throw new ToolError('WEB_TLS_FAILED', `the TLS connection to ${url.origin} failed: ${detail}`)
  throw new ToolError(
    'WEB_FETCH_FAILED',
    `fetching ${url.href} failed: ${detail}${code && !detail.includes(code) ? ` (${code})` : ''}`,
  )
}

/** Reads at most `maxBytes` of the (decoded) body, then stops reading. */
async function readCapped(
  body: Readable,
  encoding: string | undefined,
  url: URL,
  maxBytes: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const inflater = inflaterFor(encoding, url)
  const source: Readable = inflater ? pipeline(body, inflater, () => {}) : body
  const chunks: Buffer[] = []
  let size = 0
  let truncated = false
  for await (const chunk of source) {
    const piece = chunk as Buffer
    if (size + piece.length > maxBytes) {
      chunks.push(piece.subarray(0, maxBytes - size))
      size = maxBytes
      truncated = true
      break
    }
    chunks.push(piece)
    size += piece.length
  }
  discard(body)
  return { body: Buffer.concat(chunks, size), truncated }
}

/**
 * GETs `start`, following redirects by hand: every hop's host is resolved
 * and checked, and the connection goes to the address that was checked.
 * Refuses bodies that are neither HTML nor text before reading them.
 */
export async function fetchGuarded(
  start: URL,
  guard: GuardOptions,
  limits: FetchLimits,
  signal: AbortSignal,
): Promise<Fetched> {
  const redirects: URL[] = []
  let url = start
  for (;;) {
    const pinned = await checkedAddress(url, guard)
    const dispatcher = new Agent({
      connect: { timeout: limits.connectTimeoutMs, lookup: pinnedLookup(pinned) },
      headersTimeout: limits.headersTimeoutMs,
      bodyTimeout: limits.bodyTimeoutMs,
    })
    try {
      let response: Awaited<ReturnType<typeof request>>
      try {
        response = await request(url, {
          method: 'GET',
          dispatcher,
          signal,
          headers: {
            'user-agent': limits.userAgent,
            accept: 'text/html, application/xhtml+xml, text/markdown;q=0.9, text/plain;q=0.8, */*;q=0.1',
            'accept-encoding': 'gzip, deflate, br',
          },
        })
      } catch (error) {
        failed(error, url, limits, signal)
      }
      const { statusCode, headers, body } = response
      const location = header(headers, 'location')
      if (REDIRECTS.has(statusCode) && location) {
        discard(body)
        if (redirects.length >= limits.maxRedirects) {
          throw new ToolError(
            'WEB_TOO_MANY_REDIRECTS',
            `${start.href} redirected more than ${limits.maxRedirects} times (last to ${location})`,
          )
        }
        redirects.push(url)
        url = parseTarget(location, guard.maxUrlLength, url)
        continue
      }
      const contentType = header(headers, 'content-type') ?? ''
      const [type = '', ...params] = contentType.split(';')
      const mime = type.trim().toLowerCase()
      const charset = params
        .map((p) => /^\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(p)?.[1])
        .find(Boolean)
        ?.toLowerCase()
      if (mime && !kindOfType(mime)) {
        discard(body)
        const size = header(headers, 'content-length')
        throw new ToolError(
          'WEB_UNSUPPORTED_CONTENT',
          `${url.href} is ${mime}${size ? ` (${size} bytes)` : ''}; web_fetch reads HTML and text pages only`,
        )
      }
      let read: { body: Buffer; truncated: boolean }
      try {
        read = await readCapped(body, header(headers, 'content-encoding'), url, limits.maxBytes)
      } catch (error) {
        failed(error, url, limits, signal)
      }
      return { url, redirects, status: statusCode, mime, charset, ...read }
    } finally {
      await dispatcher.destroy().catch(() => {})
    }
  }
}
