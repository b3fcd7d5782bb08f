import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Context, Schema, Service } from '@dsh/cordis'
import { inSshSession, LocalHttpServer, openInBrowser } from '@dsh/local-http'
import type {} from '@dsh/loader'

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

export const BUILD_COMMAND = 'pnpm --filter @dsh/web-ui build'

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

/**
 * `ctx.webServer`: the `@dsh/local-http` server of `dsh web`, serving the
 * built browser app. Once listening it prints its URL when the rest of the
 * tree has started, and may open the browser.
 */
export class WebServer extends LocalHttpServer {
  private readonly config: WebServerConfig

  constructor(ctx: Context, config: WebServerConfig) {
    super(ctx, 'webServer', {
      label: 'dsh web',
      host: config.host,
      port: config.port,
      trustedHosts: config.trustedHosts,
      maxBodyBytes: config.maxBodyBytes,
      app: { dir: config.staticDir ?? DEFAULT_STATIC_DIR, buildCommand: BUILD_COMMAND },
    })
    this.config = config
  }

  override async [Service.init](): Promise<void> {
    await super[Service.init]()
    void this.announce(this.url as string)
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
    openInBrowser(url, 'dsh web')
  }
}
