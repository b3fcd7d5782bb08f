import type { Context } from '@dsh/cordis'
import { errorMessage } from '@dsh/tools'
import type { McpServerConfig } from './config.ts'

/**
 * Why `SessionServers.attach` failed: `conflict` (the name is taken by a
 * server of another configuration), `unavailable` (no `ctx.mcp` in this
 * profile) or `failed` (the connection could not be made). `servers` names them.
 */
export class SessionServerError extends Error {
  override name = 'SessionServerError'
  constructor(
    readonly kind: 'conflict' | 'unavailable' | 'failed',
    message: string,
    readonly servers: string[],
  ) {
    super(message)
  }
}

interface Link {
  key: string
  users: Set<string>
  ready: Promise<() => Promise<void>>
}

/**
 * The MCP servers a surface's client supplies per session (ACP's
 * `mcpServers`), connected through `ctx.mcp.connect`: sessions that supply the
 * same server under the same name share one connection, which closes when the
 * last of them detaches. A session passed to `attach` sees only the
 * client-supplied servers it asked for (`visible`, a `ctx.tools.restrict`
 * filter lifted by `detach`).
 */
export class SessionServers {
  private readonly links = new Map<string, Link>()
  /** Lifts the tool restriction of each attached session. */
  private readonly restricted = new Map<string, () => void>()

  constructor(private readonly ctx: Context) {}

  /** Connects the session's servers; the session is restricted to them (and to no other session's) even when none. */
  async attach(sessionId: string, servers: ReadonlyArray<[string, McpServerConfig]>): Promise<void> {
    if (!this.restricted.has(sessionId)) {
      const lift = this.ctx.get('tools')?.restrict(this.ctx, sessionId, (name) => this.visible(sessionId, name))
      this.restricted.set(sessionId, lift ?? (() => {}))
    }
    if (servers.length === 0) return
    const mcp = this.ctx.get('mcp')
    if (!mcp) {
      const names = servers.map(([name]) => `"${name}"`).join(', ')
      throw new SessionServerError(
        'unavailable',
        `cannot connect the MCP servers ${names}: the mcp plugin is not loaded in this profile`,
        servers.map(([name]) => name),
      )
    }
    for (const [name, config] of servers) {
      const key = JSON.stringify(config)
      let link = this.links.get(name)
      if (link && link.key !== key) {
        throw new SessionServerError(
          'conflict',
          `another session already connected an MCP server named "${name}" with a different configuration; give this one another name`,
          [name],
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
        throw new SessionServerError('failed', `could not connect MCP server "${name}": ${errorMessage(error)}`, [name])
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

  /** Lets go of the session's servers and lifts its restriction; a server no other session uses is disconnected. */
  async detach(sessionId: string): Promise<void> {
    this.restricted.get(sessionId)?.()
    this.restricted.delete(sessionId)
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
        'mcp: a session server did not disconnect cleanly: %s',
        String((failure as PromiseRejectedResult).reason),
      )
  }
}
