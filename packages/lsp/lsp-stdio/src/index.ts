import type { Context } from '@dsh/cordis'
import type {} from '@dsh/session'
import { checkServers, type LspStdioConfig } from './config.ts'
import { StdioLspProvider } from './provider.ts'

export { Config, checkServers, DEFAULT_SERVERS, type LspStdioConfig, type ServerConfig } from './config.ts'
export { hoverMarkdown, locationsOf, StdioLspProvider } from './provider.ts'

export const name = 'lsp-stdio'
export const inject = ['lsp', 'subprocess', 'fs']

/**
 * Registers the stdio provider on `ctx.lsp`. Servers start on first use and
 * stop when their session closes or this plugin is disposed.
 */
export function apply(ctx: Context, config: LspStdioConfig) {
  checkServers(config.servers)
  const provider = new StdioLspProvider(ctx, config)
  ctx.lsp.register(ctx, 'stdio', provider)
  ctx.on('session/closed', (session) => provider.stopSession(session.id))
  ctx.effect(() => () => provider.stopAll(), 'lsp-stdio: stop the language servers')
}
