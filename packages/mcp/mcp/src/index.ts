import type { Context } from '@dsh/cordis'
import { checkServer, type McpConfig } from './config.ts'
import { McpService } from './service.ts'

export {
  Config,
  type McpConfig,
  type McpHttpServer,
  type McpServerConfig,
  type McpStdioServer,
  type ReconnectConfig,
} from './config.ts'
export type { McpServerInfo, McpServerStatus } from './connection.ts'
export { toolName } from './convert.ts'
export { McpService } from './service.ts'
export { SessionServerError, SessionServers } from './session-servers.ts'

export const name = 'mcp'
export const inject = ['tools', 'subprocess']

/** Provides `ctx.mcp` and registers the tools of the configured MCP servers. */
export function apply(ctx: Context, config: McpConfig) {
  for (const [server, settings] of Object.entries(config.servers)) checkServer(server, settings)
  ctx.plugin(McpService, config)
}
