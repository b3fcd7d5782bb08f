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
import { fileURLToPath } from 'node:url'
import { type Context, Schema, ScopedRegistry, Service } from '@dsh/cordis'
import type {} from '@dsh/loader'
import { errorMessage } from '@dsh/tools'
import { inSshSession, openInBrowser } from './browser.ts'
import { HttpError, readJsonBody, sendError, sendJson } from './http.ts'
import { hasBuild, missingBuildText, serveStatic } from './static.ts'
import { checkTrust, hostLiteral, isLoopback, type TrustPolicy, trustPolicy } from './trust.ts'

declare module '@dsh/cordis' {
  interface Context {
    webServer: WebServer
  }
}

export interface WebServerConfig {
  host: string
  port: number
  trustedHosts: string[]
  openBrowser: boolean
  staticDir?: string
  maxBodyBytes: number
  settleTimeoutMs: number
}

/** The repository (installation) root: this file is `packages/host/web-server/{src,lib}/x`. */
const INSTALL_ROOT = fileURLToPath(new URL('../../../../', import.meta.url))

export const DEFAULT_STATIC_DIR = path.join(INSTALL_ROOT, 'apps/web/dist')

/** The port `dsh web` listens on unless told otherwise. */
export const DEFAULT_PORT = 3080

export const Config: Schema<WebServerConfig> = Schema.object({
  host: Schema.string()
    .default('127.0.0.1')
    .description('Address to bind. A non-loopback address turns on the access token.'),
  port: Schema.natural().max(65535).default(DEFAULT_PORT).description('Port to listen on; 0 picks a free one.'),
  trustedHosts: Schema.array(Schema.string())
    .default([])
    .description('Extra Host values the API accepts: host:port exact, or a bare host for any port.'),
  openBrowser: Schema.boolean()
    .default(false)
    .description('Open the default browser once listening (never in an SSH session).'),
  staticDir: Schema.string().description(
    'Folder of the built browser app. Default: apps/web/dist of the installation.',
  ),
  maxBodyBytes: Schema.natural()
    .min(1024)
    .default(8 * 1024 * 1024)
    .description('Largest request body, in bytes (pasted images need a few MiB).'),
  settleTimeoutMs: Schema.natural()
    .default(30_000)
    .description('How long to wait for the rest of the tree to start before printing the URL.'),
})

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
 * `ctx.webServer`: the local HTTP server. Serves the built browser app,
 * guards every `/api` call and socket upgrade (Host, Origin, token), reads
 * JSON bodies within the size limit, and dispatches to the routes plugins
 * register. Routes and upgrade handlers vanish with their plugin.
 */
export class WebServer extends Service {
  static inject = []
  private readonly home: Context
  private readonly config: WebServerConfig
  private readonly routes = new ScopedRegistry<Route>('web route')
  private readonly upgrades = new ScopedRegistry<UpgradeHandler>('web socket route')
  private readonly server: Server
  private readonly upgraded = new Set<Duplex>()
  private policy: TrustPolicy | undefined
  private address: { port: number; url: string } | undefined
  readonly staticDir: string
  /** The access token, when bound to a non-loopback address. */
  readonly token: string | undefined

  constructor(ctx: Context, config: WebServerConfig) {
    super(ctx, 'webServer')
    this.home = ctx
    this.config = config
    this.staticDir = path.resolve(config.staticDir ?? DEFAULT_STATIC_DIR)
    this.token = isLoopback(config.host) ? undefined : randomBytes(24).toString('base64url')
    // Validates --trusted-host entries before anything listens.
    trustPolicy({ host: config.host, port: config.port, trustedHosts: config.trustedHosts })
    this.server = createServer((req, res) => void this.handle(req, res))
    this.server.on('upgrade', (req, socket, head) => this.handleUpgrade(req, socket, head))
    ctx.effect(() => () => this.close(), 'web server')
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

  /** Serves `METHOD path` (`/api/sessions/:id`); returns a disposer. */
  route(ctx: Context, method: string, pattern: string, handler: RouteHandler): () => void {
    const upper = method.toUpperCase()
    if (!METHODS.has(upper)) throw new Error(`web route ${pattern}: unsupported method ${method}`)
    if (!pattern.startsWith('/api/')) throw new Error(`web route ${pattern}: API routes start with /api/`)
    return this.routes.register(ctx, `${upper} ${pattern}`, { method: upper, segments: pattern.split('/'), handler })
  }

  /** Accepts WebSocket (or other) upgrades on exactly `pathname`; returns a disposer. */
  upgrade(ctx: Context, pathname: string, handler: UpgradeHandler): () => void {
    if (!pathname.startsWith('/api/')) throw new Error(`web socket route ${pathname}: socket routes start with /api/`)
    return this.upgrades.register(ctx, pathname, handler)
  }

  private async listen(): Promise<void> {
    const { host } = this.config
    await new Promise<void>((resolve, reject) => {
      const fail = (error: NodeJS.ErrnoException) => {
        const hint =
          error.code === 'EADDRINUSE'
            ? ' (another program uses it; pass --port <n>, or --port 0 for any free port)'
            : ''
        reject(
          new Error(`dsh web cannot listen on ${host}:${this.config.port}: ${error.message}${hint}`, { cause: error }),
        )
      }
      this.server.once('error', fail)
      this.server.listen(this.config.port, host, () => {
        this.server.off('error', fail)
        resolve()
      })
    })
    this.server.on('error', (error) => this.home.logger('web-server').error(error))
    const port = (this.server.address() as AddressInfo).port
    const wildcard = ['0.0.0.0', '::', '[::]'].includes(host)
    const shown = wildcard ? '127.0.0.1' : hostLiteral(host)
    const url = `http://${shown}:${port}${this.token ? `/#token=${this.token}` : ''}`
    this.policy = trustPolicy({
      host,
      port,
      trustedHosts: this.config.trustedHosts,
      ...(this.token ? { token: this.token } : {}),
    })
    this.address = { port, url }
    if (!hasBuild(this.staticDir)) process.stderr.write(`dsh web: warning: ${missingBuildText(this.staticDir)}\n`)
    void this.announce(url)
  }

  /** Prints the URL once the rest of the tree has started (so the API answers), then opens the browser. */
  private async announce(url: string): Promise<void> {
    await this.home.get('loader')?.settle(this.config.settleTimeoutMs)
    if (!this.server.listening) return
    process.stdout.write(`dsh web: ${url}\n`)
    if (!this.config.openBrowser) return
    if (inSshSession()) {
      process.stderr.write(
        'dsh web: SSH session detected, not opening a browser; forward the port and open the URL on your machine\n',
      )
      return
    }
    process.stderr.write('dsh web: opening the default browser; pass --no-open to disable\n')
    openInBrowser(url)
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
      if (method !== 'GET' && method !== 'HEAD')
        throw new HttpError(
          405,
          'method-not-allowed',
          `${method} ${url.pathname}: only GET and HEAD serve the app`,
          undefined,
          { allow: 'GET, HEAD' },
        )
      await serveStatic(req, res, this.staticDir, url.pathname)
    } catch (error) {
      if (error instanceof HttpError) return sendError(res, error)
      // The logger prints an Error with its stack.
      this.home.logger('web-server').error('%s %s failed: %s', method, url.pathname, error)
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
      body: () => (body ??= readJsonBody(req, this.config.maxBodyBytes)),
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
        this.home.logger('web-server').error('upgrade of %s failed: %s', url.pathname, error)
      rejectUpgrade(socket, error instanceof HttpError ? error : new HttpError(500, 'internal', String(error)))
      return
    }
    this.upgraded.add(socket)
    socket.once('close', () => this.upgraded.delete(socket))
    handler(req, socket, head)
  }
}
