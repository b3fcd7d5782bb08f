import { randomBytes } from 'node:crypto'
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import type { Duplex } from 'node:stream'
import { type Context, ScopedRegistry, Service } from '@dsh/cordis'
import { errorMessage } from '@dsh/tools'
import { HttpError, readJsonBody, sendError, sendJson } from './http.ts'
import { hasBuild, missingBuildText, type StaticApp, serveStatic } from './static.ts'
import { checkTrust, hostLiteral, isLoopback, type TrustPolicy, trustPolicy } from './trust.ts'

/** Where and how a local server listens, and what it serves outside `/api`. */
export interface LocalHttpOptions {
  /** Names the server in messages, e.g. `dsh web`. */
  label: string
  /** Address to bind; a non-loopback address turns on the access token. */
  host: string
  /** Port to listen on; 0 picks a free one. */
  port: number
  /** Extra Host values the API accepts: host:port exact, or a bare host for any port. */
  trustedHosts: readonly string[]
  /** Largest request body, in bytes. */
  maxBodyBytes: number
  /** The built browser app served outside `/api`; without it only `/api` answers. */
  app?: { dir: string; buildCommand: string }
}

/** One API call as a route handler sees it. */
export interface ApiRequest {
  method: string
  path: string
  params: Record<string, string>
  query: URLSearchParams
  headers: IncomingHttpHeaders
  /** The JSON body, read and parsed on first call; `undefined` when empty. */
  body(): Promise<unknown>
}

/** A handler's answer with a status other than 200. */
export class JsonReply {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

/** Returns the response body (sent as JSON, status 200) or a `JsonReply`; throws `HttpError` for failures. */
export type RouteHandler = (request: ApiRequest) => unknown

/** Takes over an upgraded connection that passed the Host/Origin/token checks. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void

interface Route {
  method: string
  segments: string[]
  handler: RouteHandler
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])

function matchPath(segments: string[], parts: string[]): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < segments.length; i++) {
    const want = segments[i] as string
    const got = parts[i] as string
    if (want.startsWith(':')) {
      if (!got) return undefined
      try {
        params[want.slice(1)] = decodeURIComponent(got)
      } catch {
        return undefined
      }
    } else if (want !== got) return undefined
  }
  return params
}

function rejectUpgrade(socket: Duplex, error: HttpError): void {
  const body = JSON.stringify({ error: { code: error.code, message: error.message } })
  socket.end(
    `HTTP/1.1 ${error.status} ${error.code}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  )
}

/**
 * A loopback HTTP server as a cordis service: serves a built browser app,
 * guards every `/api` call and socket upgrade (Host, Origin, token), reads
 * JSON bodies within the size limit, and dispatches to the routes plugins
 * register. Routes and upgrade handlers vanish with their plugin. A surface
 * extends it and provides it under its own name (`ctx.webServer`).
 */
export class LocalHttpServer extends Service {
  static inject = []
  protected readonly home: Context
  protected readonly options: LocalHttpOptions
  private readonly routes = new ScopedRegistry<Route>('HTTP route')
  private readonly upgrades = new ScopedRegistry<UpgradeHandler>('socket route')
  protected readonly server: Server
  private readonly upgraded = new Set<Duplex>()
  private readonly app: StaticApp | undefined
  private policy: TrustPolicy | undefined
  private address: { port: number; url: string } | undefined
  /** The access token, when bound to a non-loopback address. */
  readonly token: string | undefined

  constructor(ctx: Context, name: string, options: LocalHttpOptions) {
    super(ctx, name)
    this.home = ctx
    this.options = options
    this.app = options.app && { ...options.app, dir: path.resolve(options.app.dir), label: options.label }
    this.token = isLoopback(options.host) ? undefined : randomBytes(24).toString('base64url')
    // Validates the trusted hosts before anything listens.
    trustPolicy({ host: options.host, port: options.port, trustedHosts: options.trustedHosts })
    this.server = createServer((req, res) => void this.handle(req, res))
    this.server.on('upgrade', (req, socket, head) => this.handleUpgrade(req, socket, head))
    ctx.effect(() => () => this.close(), `${options.label} server`)
  }

  /** Cordis awaits this before the plugin counts as started; a listen failure fails the plugin. */
  async [Service.init](): Promise<void> {
    await this.listen()
  }

  /** The URL the server answers on (with the token fragment when one is needed); undefined until listening. */
  get url(): string | undefined {
    return this.address?.url
  }

  get port(): number | undefined {
    return this.address?.port
  }

  /** The folder of the built app, if it serves one. */
  get staticDir(): string | undefined {
    return this.app?.dir
  }

  /** Serves `METHOD path` (`/api/sessions/:id`); returns a disposer. */
  route(ctx: Context, method: string, pattern: string, handler: RouteHandler): () => void {
    const upper = method.toUpperCase()
    if (!METHODS.has(upper)) throw new Error(`HTTP route ${pattern}: unsupported method ${method}`)
    if (!pattern.startsWith('/api/')) throw new Error(`HTTP route ${pattern}: API routes start with /api/`)
    return this.routes.register(ctx, `${upper} ${pattern}`, { method: upper, segments: pattern.split('/'), handler })
  }

  /** Accepts WebSocket (or other) upgrades on exactly `pathname`; returns a disposer. */
  upgrade(ctx: Context, pathname: string, handler: UpgradeHandler): () => void {
    if (!pathname.startsWith('/api/')) throw new Error(`socket route ${pathname}: socket routes start with /api/`)
    return this.upgrades.register(ctx, pathname, handler)
  }

  private async listen(): Promise<void> {
    const { host, port: wanted, label } = this.options
    await new Promise<void>((resolve, reject) => {
      const fail = (error: NodeJS.ErrnoException) => {
        const hint =
          error.code === 'EADDRINUSE'
            ? ' (another program uses it; pass --port <n>, or --port 0 for any free port)'
            : ''
        reject(new Error(`${label} cannot listen on ${host}:${wanted}: ${error.message}${hint}`, { cause: error }))
      }
      this.server.once('error', fail)
      this.server.listen(wanted, host, () => {
        this.server.off('error', fail)
        resolve()
      })
    })
    this.server.on('error', (error) => this.home.logger('local-http').error(error))
    const port = (this.server.address() as AddressInfo).port
    const wildcard = ['0.0.0.0', '::', '[::]'].includes(host)
    const shown = wildcard ? '127.0.0.1' : hostLiteral(host)
    const url = `http://${shown}:${port}${this.token ? `/#token=${this.token}` : ''}`
    this.policy = trustPolicy({
      host,
      port,
      trustedHosts: this.options.trustedHosts,
      ...(this.token ? { token: this.token } : {}),
    })
    this.address = { port, url }
    if (this.app && !hasBuild(this.app.dir)) process.stderr.write(`${label}: warning: ${missingBuildText(this.app)}\n`)
  }

  private close(): Promise<void> {
    for (const socket of this.upgraded) socket.destroy()
    this.upgraded.clear()
    return new Promise((resolve) => {
      // Resolves with an error when the server never listened: nothing to wait for then.
      this.server.close(() => resolve())
      this.server.closeAllConnections()
    })
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const method = (req.method ?? 'GET').toUpperCase()
    try {
      if (url.pathname === '/api' || url.pathname.startsWith('/api/')) {
        await this.handleApi(req, res, method, url)
        return
      }
      if (!this.app)
        throw new HttpError(404, 'not-found', `no API route ${method} ${url.pathname}; this server only answers /api`)
      if (method !== 'GET' && method !== 'HEAD')
        throw new HttpError(
          405,
          'method-not-allowed',
          `${method} ${url.pathname}: only GET and HEAD serve the app`,
          undefined,
          { allow: 'GET, HEAD' },
        )
      await serveStatic(req, res, this.app, url.pathname)
    } catch (error) {
      if (error instanceof HttpError) return sendError(res, error)
      // The logger prints an Error with its stack.
      this.home.logger('local-http').error('%s %s failed: %s', method, url.pathname, error)
      sendError(res, new HttpError(500, 'internal', `${method} ${url.pathname} failed: ${errorMessage(error)}`))
    }
  }

  private async handleApi(req: IncomingMessage, res: ServerResponse, method: string, url: URL): Promise<void> {
    if (!this.policy) throw new HttpError(503, 'unavailable', 'the server is still starting')
    checkTrust(this.policy, req.headers)
    if (this.upgrades.has(url.pathname))
      throw new HttpError(
        426,
        'upgrade-required',
        `${url.pathname} is a WebSocket endpoint; connect with a WebSocket client`,
        undefined,
        { upgrade: 'websocket' },
      )
    const parts = url.pathname.split('/')
    const allowed: string[] = []
    let found: { route: Route; params: Record<string, string> } | undefined
    for (const route of this.routes.values()) {
      const params = matchPath(route.segments, parts)
      if (!params) continue
      allowed.push(route.method)
      if (route.method === method) found = { route, params }
    }
    if (!found) {
      if (allowed.length) {
        throw new HttpError(
          405,
          'method-not-allowed',
          `${method} is not allowed on ${url.pathname}; use ${allowed.join(', ')}`,
          undefined,
          { allow: allowed.join(', ') },
        )
      }
      throw new HttpError(404, 'not-found', `no API route ${method} ${url.pathname}`)
    }
    let body: Promise<unknown> | undefined
    const request: ApiRequest = {
      method,
      path: url.pathname,
      params: found.params,
      query: url.searchParams,
      headers: req.headers,
      body: () => (body ??= readJsonBody(req, this.options.maxBodyBytes)),
    }
    const result = await found.route.handler(request)
    // Drain a body the handler did not read, so the connection stays usable, within the limit.
    if (!body) await request.body().catch(() => undefined)
    if (result instanceof JsonReply) sendJson(res, result.status, result.body)
    else sendJson(res, 200, result ?? {})
  }

  private handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const handler = this.upgrades.get(url.pathname)
    try {
      if (!this.policy) throw new HttpError(503, 'unavailable', 'the server is still starting')
      checkTrust(this.policy, req.headers, url.searchParams.get('token'))
      if (!handler) throw new HttpError(404, 'not-found', `no WebSocket endpoint at ${url.pathname}`)
    } catch (error) {
      if (!(error instanceof HttpError))
        this.home.logger('local-http').error('upgrade of %s failed: %s', url.pathname, error)
      rejectUpgrade(socket, error instanceof HttpError ? error : new HttpError(500, 'internal', String(error)))
      return
    }
    this.upgraded.add(socket)
    socket.once('close', () => this.upgraded.delete(socket))
    handler(req, socket, head)
  }
}
