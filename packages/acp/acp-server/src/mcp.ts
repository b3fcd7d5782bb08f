import { type McpServer, RequestError } from '@agentclientprotocol/sdk/unstable'
import type { Context } from '@dsh/cordis'
import type { McpServerConfig, McpService } from '@dsh/mcp'

/** The `ctx.mcp` service when the mcp plugin is loaded. */
export function mcpOf(ctx: Context): McpService | undefined {
  return ctx.get('mcp')
}

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

interface Link {
  key: string
  users: Set<string>
  ready: Promise<() => Promise<void>>
}

/**
 * The MCP servers ACP clients supplied, shared by the sessions that supplied
 * the same server under the same name and disconnected when the last of them
 * goes. A session sees only the client-supplied servers it asked for.
 */
export class McpLinks {
  private readonly links = new Map<string, Link>()

  constructor(private readonly ctx: Context) {}

  async attach(sessionId: string, servers: ReadonlyArray<[string, McpServerConfig]>): Promise<void> {
    if (servers.length === 0) return
    const mcp = mcpOf(this.ctx)
    if (!mcp) {
      const names = servers.map(([name]) => `"${name}"`).join(', ')
      throw RequestError.internalError(
        { servers: servers.map(([name]) => name) },
        `cannot connect the MCP servers ${names}: the mcp plugin is not loaded in this profile`,
      )
    }
    for (const [name, config] of servers) {
      const key = JSON.stringify(config)
      let link = this.links.get(name)
      if (link && link.key !== key) {
        throw RequestError.invalidParams(
          { server: name },
          `another session already connected an MCP server named "${name}" with a different configuration; give this one another name`,
        )
      }
      if (!link) {
        const ready = mcp.connect(this.ctx, name, config)
        link = { key, users: new Set(), ready }
        this.links.set(name, link)
        ready.catch(() => {
          if (this.links.get(name) === link) this.links.delete(name)
        })
      }
      link.users.add(sessionId)
      try {
        await link.ready
      } catch (error) {
        throw RequestError.internalError(
          { server: name },
          `could not connect MCP server "${name}": ${error instanceof Error ? error.message : String(error)}`,
        )
      }
    }
  }

  /** Whether the session may use the tool: tools of client-supplied servers only for the sessions that supplied them. */
  visible(sessionId: string, toolName: string): boolean {
    for (const [name, link] of this.links) {
      if (toolName.startsWith(`mcp__${name}__`)) return link.users.has(sessionId)
    }
    return true
  }

  async detach(sessionId: string): Promise<void> {
    const closing: Promise<void>[] = []
    for (const [name, link] of this.links) {
      if (!link.users.delete(sessionId) || link.users.size > 0) continue
      this.links.delete(name)
      closing.push(
        link.ready.then(
          (disconnect) => disconnect(),
          () => {},
        ),
      )
    }
    const failures = (await Promise.allSettled(closing)).filter((r) => r.status === 'rejected')
    for (const failure of failures)
      this.ctx.logger.warn(
        'acp: an MCP server did not disconnect cleanly: %s',
        String((failure as PromiseRejectedResult).reason),
      )
  }
}
