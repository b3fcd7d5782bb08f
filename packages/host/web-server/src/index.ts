import type { Context } from '@dsh/cordis'
import { WebServer, type WebServerConfig } from './server.ts'

export {
  Config,
  DEFAULT_PORT,
  DEFAULT_STATIC_DIR,
  type ApiRequest,
  JsonReply,
  type RouteHandler,
  type UpgradeHandler,
  WebServer,
  type WebServerConfig,
} from './server.ts'
export { HttpError, parseWith } from './http.ts'
export { checkTrust, isLoopback, parseAuthority, type TrustPolicy, trustPolicy } from './trust.ts'
export { BUILD_COMMAND } from './static.ts'

export const name = 'web-server'

/** Provides `ctx.webServer`: listens, serves the built app, guards and dispatches `/api`. Starts once listening; a listen failure fails it. */
export async function apply(ctx: Context, config: WebServerConfig) {
  await ctx.plugin(WebServer, config)
}
