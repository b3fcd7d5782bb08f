import { Schema } from '@dsh/cordis'

/** A server dsh starts and talks to over stdin/stdout. */
export interface McpStdioServer {
  command: string
  args?: string[]
  /** Added to the scrubbed environment the server starts with. */
  env?: Record<string, string>
  cwd?: string
}

/** A server reached over streamable HTTP. */
export interface McpHttpServer {
  url: string
  headers?: Record<string, string>
}

export type McpServerConfig = McpStdioServer | McpHttpServer

export interface ReconnectConfig {
  initialDelayMs: number
  maxDelayMs: number
  maxAttempts: number
}

export interface McpConfig {
  servers: Record<string, McpServerConfig>
  toolCallTimeoutMs: number
  startupTimeoutMs: number
  reconnect: ReconnectConfig
  stderrTailChars: number
}

export const SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/

const StdioSchema: Schema<McpStdioServer> = Schema.object({
  command: Schema.string().required().description('The program that starts the server (run without a shell).'),
  args: Schema.array(Schema.string()).description('Its arguments.'),
  env: Schema.dict(Schema.string()).description('Variables added to the scrubbed environment the server gets.'),
  cwd: Schema.string().description('Its working directory; that of dsh when unset.'),
})

const HttpSchema: Schema<McpHttpServer> = Schema.object({
  url: Schema.string().required().description('The streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp.'),
  headers: Schema.dict(Schema.string()).description('Headers sent with every request (e.g. Authorization).'),
})

export const ServerSchema: Schema<McpServerConfig> = Schema.union([StdioSchema, HttpSchema])

export const Config: Schema<McpConfig> = Schema.object({
  servers: Schema.dict(ServerSchema)
    .default({})
    .description(
      'MCP servers by name ([A-Za-z0-9_-], at most 32 characters): { command, args?, env?, cwd? } or { url, headers? }.',
    ),
  toolCallTimeoutMs: Schema.natural()
    .min(1)
    .default(60_000)
    .description('The longest one MCP tool call may take, in milliseconds.'),
  startupTimeoutMs: Schema.natural()
    .min(1)
    .default(10_000)
    .description(
      'How long connecting to a server (and listing its tools) may take; the first model request waits at most this for servers still starting.',
    ),
  reconnect: Schema.object({
    initialDelayMs: Schema.natural()
      .min(1)
      .default(500)
      .description('The wait before the first reconnect; it doubles after each failed attempt.'),
    maxDelayMs: Schema.natural().min(1).default(30_000).description('The longest wait between reconnects.'),
    maxAttempts: Schema.natural()
      .default(10)
      .description('Failed attempts in a row after which a server is given up until restart; 0 never retries.'),
  }).description('Reconnecting a server that failed to start or stopped.'),
  stderrTailChars: Schema.natural()
    .default(2000)
    .description('How much of the end of the stderr of a failed stdio server is reported.'),
})

/** Throws, naming the server, for what the schema cannot check. */
export function checkServer(name: string, server: McpServerConfig): void {
  if (!SERVER_NAME.test(name)) throw new Error(`mcp: server name "${name}" must be 1 to 32 letters, digits, "_" or "-"`)
  if (server === null || typeof server !== 'object')
    throw new Error(`mcp: server "${name}" needs { command } or { url }`)
  const stdio = 'command' in server
  const http = 'url' in server
  if (stdio === http)
    throw new Error(`mcp: server "${name}" needs exactly one of command (stdio) or url (streamable HTTP)`)
  if (stdio && (typeof server.command !== 'string' || !server.command.trim()))
    throw new Error(`mcp: server "${name}": command is empty`)
  if (http) {
    let url: URL
    try {
      url = new URL(server.url)
    } catch {
      throw new Error(`mcp: server "${name}": url "${server.url}" is not a URL`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error(`mcp: server "${name}": url "${server.url}" must be http or https`)
  }
}
