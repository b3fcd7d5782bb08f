import { type McpServer, RequestError } from '@agentclientprotocol/sdk/unstable'
import { type McpServerConfig, SessionServerError } from '@dsh/mcp'

const pairs = (list: Array<{ name: string; value: string }>) =>
  Object.fromEntries(list.map((entry) => [entry.name, entry.value]))

/** An ACP MCP server as a `ctx.mcp` config; stdio servers start in the session's folder. SSE is refused. */
export function mcpConfig(server: McpServer, cwd: string): McpServerConfig {
  if ('type' in server && server.type === 'sse') {
    throw RequestError.invalidParams(
      { server: server.name },
      `MCP server "${server.name}" uses SSE, which dsh does not support; use a stdio or http server`,
    )
  }
  if ('type' in server && server.type === 'acp') {
    throw RequestError.invalidParams(
      { server: server.name },
      `MCP server "${server.name}" is served over ACP, which dsh does not support; use a stdio or http server`,
    )
  }
  if ('url' in server) return { url: server.url, headers: pairs(server.headers) }
  return { command: server.command, args: server.args, env: pairs(server.env), cwd }
}

/** A failed `SessionServers.attach` as ACP's error: a name clash is -32602, a server that cannot connect -32603. */
export function mcpError(error: unknown): unknown {
  if (!(error instanceof SessionServerError)) return error
  const [server] = error.servers
  if (error.kind === 'conflict') return RequestError.invalidParams({ server }, error.message)
  return RequestError.internalError(error.kind === 'failed' ? { server } : { servers: error.servers }, error.message)
}
