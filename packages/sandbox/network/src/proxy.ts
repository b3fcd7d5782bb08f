import { randomBytes } from 'node:crypto'
import { lookup } from 'node:dns/promises'
import type http from 'node:http'
import net, { isIP } from 'node:net'
import type { Duplex } from 'node:stream'
import type { NetworkDecision, NetworkGrantRequest, NetworkTarget } from '@dsh/sandbox'
import { nonPublicReason } from '@dsh/address-rules'
import { type HostPattern, matchesHost, normalizeHost } from './hosts.ts'

/** A CIDR range, already checked. */
export interface AddressRange {
  address: string
  prefix: number
  family: 'ipv4' | 'ipv6'
}

/** How the proxy decides, from the provider's config. */
export interface ProxyRules {
  allowed: readonly HostPattern[]
  /** Names answered without DNS (lowercase name → address). */
  staticHosts: ReadonlyMap<string, string>
  /** Addresses counted as public although the address rules class them otherwise. */
  publicRanges: readonly AddressRange[]
  /** How long a name lookup may take. */
  resolveTimeoutMs: number
}

/** One command's grant, with what the user allowed for it so far. */
interface Grant {
  request: NetworkGrantRequest
  /** Hosts the user allowed for this command. */
  allowedHosts: Set<string>
  /** Decisions already logged for this command, so a build's hundred requests to one host log once. */
  logged: Set<string>
  /** Asks are put to the user one at a time. */
  asking: Promise<unknown>
}

type Verdict = { allow: true; address: string } | { allow: false; status: number; reason: string }

const PROXY_USER = 'dsh'

/**
 * dsh's filtering HTTP(S) proxy. It answers plain `http://` requests in
 * absolute form and `CONNECT host:port` tunnels, for commands that carry a
 * grant's token as their proxy credentials. A host is allowed when it is on
 * the allowlist or the user allows it (asked through the grant); then every
 * address its name resolves to must be public (the same address rules as
 * web_fetch), and the connection goes to the checked address.
 */
export class FilteringProxy {
  private readonly grants = new Map<string, Grant>()
  private server: http.Server | undefined
  private request: typeof http.request | undefined
  private publicRanges: net.BlockList | undefined

  constructor(private readonly rules: ProxyRules) {}

  /**
   * Serves the connections `listener` accepts. The HTTP machinery loads here,
   * on the first command that needs the proxy, not when dsh starts.
   */
  async serve(listener: net.Server): Promise<void> {
    const { createServer, request } = await import('node:http')
    this.request = request
    const server = (this.server ??= createServer((request, response) => void this.forward(request, response)))
    server.on(
      'connect',
      (request: http.IncomingMessage, socket: Duplex, head: Buffer) => void this.tunnel(request, socket, head),
    )
    server.on('clientError', (_error, socket) => socket.destroy())
    listener.on('connection', (socket) => server.emit('connection', socket))
  }

  close(): void {
    this.server?.close()
  }

  /** Registers a grant; the returned token goes into the command's proxy URL. */
  grant(request: NetworkGrantRequest): string {
    const token = randomBytes(18).toString('base64url')
    this.grants.set(token, { request, allowedHosts: new Set(), logged: new Set(), asking: Promise.resolve() })
    return token
  }

  /** Forgets every grant of a session. */
  forgetSession(sessionId: string): void {
    for (const [token, grant] of this.grants) if (grant.request.sessionId === sessionId) this.grants.delete(token)
  }

  /** The proxy URL a command with this token is given. */
  static url(token: string, port: number): string {
    return `http://${PROXY_USER}:${token}@127.0.0.1:${port}`
  }

  private grantOf(request: http.IncomingMessage): Grant | undefined {
    const header = request.headers['proxy-authorization']
    const match = typeof header === 'string' ? /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header.trim()) : null
    if (!match) return undefined
    const [user, token] = Buffer.from(match[1] as string, 'base64')
      .toString('utf8')
      .split(':', 2)
    if (user !== PROXY_USER || !token) return undefined
    return this.grants.get(token)
  }

  private async tunnel(request: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy())
    const grant = this.grantOf(request)
    if (!grant) return refuseSocket(socket, 407, 'dsh network proxy: this connection carries no valid grant')
    const target = parseAuthority(request.url ?? '')
    if (!target) return refuseSocket(socket, 400, `dsh network proxy: ${JSON.stringify(request.url)} is not host:port`)
    const verdict = await this.decide(grant, target, socket)
    if (!verdict.allow) return refuseSocket(socket, verdict.status, verdict.reason)
    const upstream = net.connect({ host: verdict.address, port: target.port })
    upstream.on('connect', () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length) upstream.write(head)
      upstream.pipe(socket)
      socket.pipe(upstream)
    })
    upstream.on('error', (error) => {
      if (socket.writable && !upstream.readable)
        refuseSocket(socket, 502, `dsh network proxy: ${target.host}: ${error.message}`)
      else socket.destroy()
    })
    socket.on('close', () => upstream.destroy())
  }

  private async forward(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const grant = this.grantOf(request)
    if (!grant) {
      response.writeHead(407, { 'proxy-authenticate': 'Basic realm="dsh"', 'content-type': 'text/plain' })
      response.end('dsh network proxy: this request carries no valid grant\n')
      return
    }
    let url: URL
    try {
      url = new URL(request.url ?? '')
    } catch {
      url = new URL('invalid:')
    }
    if (url.protocol !== 'http:') {
      response.writeHead(400, { 'content-type': 'text/plain' })
      response.end(
        `dsh network proxy: only absolute http:// URLs are forwarded (use CONNECT for https), got ${JSON.stringify(request.url)}\n`,
      )
      return
    }
    const target = { host: normalizeHost(url.hostname), port: Number(url.port || 80) }
    const verdict = await this.decide(grant, target, request.socket)
    if (!verdict.allow) {
      response.writeHead(verdict.status, { 'content-type': 'text/plain' })
      response.end(`${verdict.reason}\n`)
      return
    }
    const headers = { ...request.headers }
    delete headers['proxy-authorization']
    delete headers['proxy-connection']
    const upstream = (this.request as typeof http.request)({
      host: verdict.address,
      port: target.port,
      method: request.method,
      path: `${url.pathname}${url.search}`,
      headers,
      setHost: false,
    })
    upstream.on('response', (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.rawHeaders)
      answer.pipe(response)
    })
    upstream.on('error', (error) => {
      if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' })
      response.end(`dsh network proxy: ${target.host}: ${error.message}\n`)
    })
    request.pipe(upstream)
  }

  /** Allowlist, then the user, then the address rules; every decision is recorded once per command and host. */
  private async decide(grant: Grant, target: NetworkTarget, socket: Duplex): Promise<Verdict> {
    const host = normalizeHost(target.host)
    let by: NetworkDecision['by']
    if (matchesHost(host, this.rules.allowed)) by = 'allowlist'
    else if (grant.allowedHosts.has(host)) by = 'user'
    else {
      const allowed = await this.ask(grant, { host, port: target.port }, socket)
      if (!allowed) {
        const reason = grant.request.ask
          ? `dsh network proxy: ${host} is not on the allowlist and the user did not allow it`
          : `dsh network proxy: ${host} is not on the allowlist, and no one can be asked here`
        this.record(grant, {
          host,
          port: target.port,
          decision: 'deny',
          by: grant.request.ask ? 'user' : 'policy',
          reason,
        })
        return { allow: false, status: 403, reason }
      }
      grant.allowedHosts.add(host)
      by = 'user'
    }
    const resolved = await this.resolve(host)
    if ('reason' in resolved) {
      const reason = `dsh network proxy: ${host}: ${resolved.reason}`
      this.record(grant, { host, port: target.port, decision: 'deny', by: 'address', reason })
      return { allow: false, status: resolved.status, reason }
    }
    this.record(grant, { host, port: target.port, decision: 'allow', by })
    return { allow: true, address: resolved.address }
  }

  private ask(grant: Grant, target: NetworkTarget, socket: Duplex): Promise<boolean> {
    const ask = grant.request.ask
    if (!ask) return Promise.resolve(false)
    const result = grant.asking.then(async () => {
      if (grant.allowedHosts.has(target.host)) return true
      const controller = new AbortController()
      const abandon = () => controller.abort()
      socket.once('close', abandon)
      try {
        return (await ask(target, controller.signal)) === true
      } catch {
        return false
      } finally {
        socket.off('close', abandon)
      }
    })
    grant.asking = result.catch(() => undefined)
    return result
  }

  /** The address to connect to: every address the name has must be public. */
  private async resolve(host: string): Promise<{ address: string } | { reason: string; status: number }> {
    let addresses: string[]
    const pinned = this.rules.staticHosts.get(host)
    if (pinned) addresses = [pinned]
    else if (isIP(host)) addresses = [host]
    else {
      try {
        const found = await withTimeout(lookup(host, { all: true, verbatim: true }), this.rules.resolveTimeoutMs)
        addresses = found.map((entry) => entry.address)
      } catch (error) {
        return { reason: `the name could not be resolved (${(error as Error).message})`, status: 502 }
      }
    }
    if (!this.publicRanges) {
      this.publicRanges = new net.BlockList()
      for (const range of this.rules.publicRanges)
        this.publicRanges.addSubnet(range.address, range.prefix, range.family)
    }
    for (const address of addresses) {
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
      if (this.publicRanges.check(address, family)) continue
      const why = nonPublicReason(address)
      if (why)
        return { reason: `it resolves to ${address}, ${why}, which sandboxed commands may not reach`, status: 403 }
    }
    const first = addresses[0]
    if (!first) return { reason: 'the name has no address', status: 502 }
    return { address: first }
  }

  private record(grant: Grant, decision: NetworkDecision): void {
    const key = `${decision.host}:${decision.port}:${decision.decision}`
    if (grant.logged.has(key)) return
    grant.logged.add(key)
    try {
      grant.request.record?.(decision)
    } catch {
      // A failing logger never breaks a connection.
    }
  }
}

/** `host:port` of a CONNECT request (IPv6 in brackets). */
export function parseAuthority(authority: string): NetworkTarget | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/\s]+):(\d{1,5})$/.exec(authority)
  if (!match) return undefined
  const port = Number(match[2])
  if (port < 1 || port > 65_535) return undefined
  return { host: normalizeHost(match[1] as string), port }
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  403: 'Forbidden',
  407: 'Proxy Authentication Required',
  502: 'Bad Gateway',
}

function refuseSocket(socket: Duplex, status: number, reason: string): void {
  const text = `${reason}\n`
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\n` +
      (status === 407 ? 'Proxy-Authenticate: Basic realm="dsh"\r\n' : '') +
      `Content-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  )
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms}ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
