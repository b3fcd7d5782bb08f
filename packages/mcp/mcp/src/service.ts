import { type Context, Service } from '@dsh/cordis'
import { untilAborted } from '@dsh/tools'
import { checkServer, type McpConfig, type McpServerConfig } from './config.ts'
import { McpConnection, type McpServerInfo } from './connection.ts'

declare module '@dsh/cordis' {
  interface Context {
    mcp: McpService
  }
}

/**
 * `ctx.mcp`: the MCP servers of this app, from config and added at runtime.
 * Each server's tools are registered as `mcp__<server>__<tool>` through
 * `ctx.tools`, so they go through the normal pipeline and approvals.
 */
export class McpService extends Service {
  static inject = ['tools', 'subprocess']
  private readonly home: Context
  private readonly settings: McpConfig
  private readonly connections = new Map<string, McpConnection>()

  constructor(ctx: Context, config: McpConfig) {
    super(ctx, 'mcp')
    this.home = ctx
    this.settings = config
    for (const [name, server] of Object.entries(config.servers)) this.open(ctx, name, server)
    // The first request of an agent waits for servers still starting, so their tools are in it.
    ctx.on('agent/pre-step', async (_agent, step, next) => {
      const starting = [...this.connections.values()]
        .filter((c) => c.status === 'connecting')
        .map((c) => c.firstAttempt)
      if (starting.length) await untilAborted(Promise.all(starting), step.signal).catch(() => {})
      return next()
    })
  }

  /**
   * Connects a server a surface supplies at runtime (e.g. ACP `mcpServers`).
   * Its tools belong to `ctx` and the server is closed when `ctx` is disposed
   * or the returned disposer is called. Resolves once the first connection
   * attempt is over; a server that fails to start is reported and retried, not
   * thrown. Throws for a bad name, a name in use, or a malformed config.
   */
  async connect(ctx: Context, name: string, server: McpServerConfig): Promise<() => Promise<void>> {
    const { connection, dispose } = this.open(ctx, name, server)
    await connection.firstAttempt
    return dispose
  }

  /** Every server with its status, its registered tools and its last error. */
  list(): McpServerInfo[] {
    return [...this.connections.values()].map((connection) => connection.info())
  }

  private open(ctx: Context, name: string, server: McpServerConfig) {
    checkServer(name, server)
    if (this.connections.has(name))
      throw new Error(`mcp: a server named "${name}" is already connected; pick another name`)
    const connection = new McpConnection(this.home, ctx, name, server, this.settings)
    const dispose = ctx.effect(() => {
      this.connections.set(name, connection)
      connection.start()
      return async () => {
        if (this.connections.get(name) === connection) this.connections.delete(name)
        await connection.close()
      }
    }, `mcp server ${name}`)
    return { connection, dispose: async () => void (await dispose()) }
  }
}
