import { timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { isIP } from 'node:net'
import os from 'node:os'
import { HttpError } from './http.ts'

/** What a request must match to reach the API. */
export interface TrustPolicy {
  /** Accepted `host:port` authorities, lowercase, IPv6 in brackets. */
  authorities: Set<string>
  /** Accepted bare hosts (any port), lowercase. */
  anyPortHosts: Set<string>
  /** Required bearer token, if any. */
  token?: string
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]']

/** Whether a bind address only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare)
}

function isWildcard(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '')
  return bare === '0.0.0.0' || bare === '::'
}

/** `host` as it appears in a Host header: lowercase, IPv6 literals bracketed. */
export function hostLiteral(host: string): string {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  return isIP(bare) === 6 ? `[${bare}]` : bare
}

/**
 * Splits a `host[:port]` authority. Returns undefined when it is not a
 * canonical authority (userinfo, path, bad port, empty host).
 */
export function parseAuthority(value: string): { host: string; port?: number } | undefined {
  const text = value.trim().toLowerCase()
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/.exec(text)
  if (!match) return undefined
  const host = match[1] as string
  if (host.startsWith('[') && isIP(host.slice(1, -1)) !== 6) return undefined
  if (match[2] === undefined) return { host }
  const port = Number(match[2])
  if (port > 65535) return undefined
  return { host, port }
}

function interfaceAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flat()
    .flatMap((info) => (info ? [hostLiteral(info.address.split('%')[0] as string)] : []))
}

/**
 * The hosts the API accepts for a server bound to `host:port`: the loopback
 * names, the bound address, every interface address when bound to all of
 * them, and the `--trusted-host` entries (exact `host:port`, or a bare host
 * for any port). A malformed trusted host throws, naming it.
 */
export function trustPolicy(options: {
  host: string
  port: number
  trustedHosts: readonly string[]
  token?: string
}): TrustPolicy {
  const { port } = options
  const authorities = new Set<string>()
  const anyPortHosts = new Set<string>()
  const names = [...LOOPBACK_NAMES, hostLiteral(options.host)]
  if (isWildcard(options.host)) names.push(...interfaceAddresses())
  for (const name of names) if (!isWildcard(name)) authorities.add(`${name}:${port}`)
  for (const entry of options.trustedHosts) {
    const parsed = parseAuthority(entry)
    if (!parsed)
      throw new Error(`trusted host "${entry}" is not a host or host:port (e.g. myhost.lan or myhost.lan:3080)`)
    const host = hostLiteral(parsed.host)
    if (parsed.port === undefined) anyPortHosts.add(host)
    else authorities.add(`${host}:${parsed.port}`)
  }
  const policy: TrustPolicy = { authorities, anyPortHosts }
  if (options.token) policy.token = options.token
  return policy
}

function single(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

function hostAllowed(policy: TrustPolicy, hostHeader: string | undefined): boolean {
  if (!hostHeader) return false
  const parsed = parseAuthority(hostHeader)
  if (!parsed) return false
  const host = hostLiteral(parsed.host)
  if (policy.anyPortHosts.has(host)) return true
  // A Host without a port means port 80; accept it only if the server really is on 80.
  return policy.authorities.has(`${host}:${parsed.port ?? 80}`)
}

function sameToken(expected: string, given: string): boolean {
  const a = Buffer.from(expected)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * Checks `Host`, `Origin`, `Sec-Fetch-Site` and, when the policy has one, the
 * token (from `Authorization: Bearer`, or `queryToken` for sockets). Throws an
 * `HttpError` naming the header that failed.
 */
export function checkTrust(policy: TrustPolicy, headers: IncomingHttpHeaders, queryToken?: string | null): void {
  const host = single(headers, 'host')
  if (!hostAllowed(policy, host)) {
    throw new HttpError(
      403,
      'bad-host',
      `Host header ${host === undefined ? '(missing)' : JSON.stringify(host)} is not this dsh server; open it as http://127.0.0.1:<port> or pass --trusted-host`,
    )
  }
  const origin = single(headers, 'origin')
  if (origin !== undefined && origin.toLowerCase() !== `http://${(host as string).toLowerCase()}`) {
    throw new HttpError(
      403,
      'bad-origin',
      `Origin ${JSON.stringify(origin)} is not this server's origin (http://${host}); cross-site requests are refused`,
    )
  }
  if (single(headers, 'sec-fetch-site') === 'cross-site') {
    throw new HttpError(403, 'bad-origin', 'Sec-Fetch-Site is cross-site; requests from other sites are refused')
  }
  if (policy.token === undefined) return
  const auth = single(headers, 'authorization')
  const bearer = auth && /^Bearer\s+(.+)$/i.exec(auth.trim())?.[1]
  const given = bearer || queryToken
  if (!given)
    throw new HttpError(
      401,
      'unauthorized',
      'this server needs its access token: send Authorization: Bearer <token> (the token is in the URL dsh web printed)',
    )
  if (!sameToken(policy.token, given))
    throw new HttpError(
      401,
      'unauthorized',
      'the access token is wrong; use the one in the URL dsh web printed at startup',
    )
}
