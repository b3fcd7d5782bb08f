import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { ToolError } from '@dsh/tools'
import { hostAllowed, nonPublicReason } from '@dsh/address-rules'

export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

/** Resolves a host name to all its addresses; the default is the system resolver. */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>

export const systemResolver: Resolver = async (host) => {
  const found = await lookup(host, { all: true, verbatim: true })
  return found.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }))
}

export interface GuardOptions {
  allowPrivate: boolean
  allowHosts: readonly string[]
  maxUrlLength: number
  resolve: Resolver
}

/** The URL a call or a redirect names, refused unless it is http(s) without credentials. */
export function parseTarget(raw: string, maxUrlLength: number, base?: URL): URL {
  if (raw.length > maxUrlLength)
    throw new ToolError(
      'WEB_BLOCKED_URL',
      `the URL is ${raw.length} characters long; at most ${maxUrlLength} are accepted`,
    )
  let url: URL
  try {
    url = base ? new URL(raw, base) : new URL(raw)
  } catch {
    throw new ToolError(
      'WEB_BAD_URL',
      `${JSON.stringify(raw)} is not a valid absolute URL (write it like https://example.com/page)`,
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ToolError(
      'WEB_BLOCKED_URL',
      `${url.href}: only http and https URLs can be fetched, not ${url.protocol.replace(/:$/, '')}`,
    )
  }
  if (url.username || url.password)
    throw new ToolError('WEB_BLOCKED_URL', `${url.origin}: URLs with a user name or password are not fetched`)
  return url
}

/**
 * Resolves the URL's host and checks every address it resolves to. The
 * returned address is the one to connect to, so a second DNS answer (DNS
 * rebinding) cannot change where the request goes.
 */
export async function checkedAddress(url: URL, options: GuardOptions): Promise<ResolvedAddress> {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const exempt = options.allowPrivate || hostAllowed(host, options.allowHosts)
  const literal = isIP(host)
  let addresses: ResolvedAddress[]
  if (literal) addresses = [{ address: host, family: literal === 6 ? 6 : 4 }]
  else {
    try {
      addresses = await options.resolve(host)
    } catch (error) {
      const code = (error as { code?: string }).code
      throw new ToolError('WEB_DNS_FAILED', `could not resolve ${host}${code ? ` (${code})` : ''}: check the host name`)
    }
    if (addresses.length === 0) throw new ToolError('WEB_DNS_FAILED', `${host} resolved to no address`)
  }
  if (!exempt) {
    for (const { address } of addresses) {
      const reason = nonPublicReason(address)
      if (reason) {
        const via = literal ? '' : ` (${host} resolves to ${address})`
        throw new ToolError(
          'WEB_BLOCKED_ADDRESS',
          `${url.origin} is not a public address: ${reason}${via}. web_fetch only reaches public internet addresses; ` +
            'the user can allow others in the web-fetch config (allowPrivate or allowHosts).',
        )
      }
    }
  }
  return addresses[0] as ResolvedAddress
}
