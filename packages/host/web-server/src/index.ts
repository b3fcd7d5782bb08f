import type { Context } from '@dsh/cordis'
import { WebServer, type WebServerConfig } from './server.ts'

export {
  BUILD_COMMAND,
  Config,
  DEFAULT_PORT,
  DEFAULT_STATIC_DIR,
  WebServer,
  type WebServerConfig,
} from './server.ts'

export const name = 'web-server'

/** Provides `ctx.webServer`: listens, serves the built app, guards and dispatches `/api`. Starts once listening; a listen failure fails it. */
export async function apply(ctx: Context, config: WebServerConfig) {
  await ctx.plugin(WebServer, config)
}
