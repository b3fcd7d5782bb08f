import type { Agent } from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import type { SessionEvent, SessionId, SessionMeta } from '@dsh/session'
import type {} from '@dsh/session-catalog'
import type { OpenedLog } from '@dsh/session-persistence'
import { notFound } from './errors.ts'
import type { ConversationSummary } from './listing.ts'
import { RecentReads } from './recent-reads.ts'

const NEITHER = ': it is neither open nor stored'

/** A session's log read for display (`SessionAccess.view`): live, or opened from its stored log without resuming it. */
export interface LogView {
  meta: SessionMeta
  events: readonly SessionEvent[]
  agent?: Agent
}

/**
 * A long-running surface's side of sessions over `ctx.conversations`: resumes
 * wait for an idle unload in progress (`IdleUnloader`), stored logs are read
 * through the recent-reads cache, and the list shows live sessions fresher
 * than their stored copy.
 */
export class SessionAccess {
  private readonly recentReads = new RecentReads()
  /** Agents being unloaded: a request for one waits until its session is closed, then resumes it. */
  private readonly unloading = new Map<string, Promise<void>>()

  constructor(
    private readonly ctx: Context,
    /** Where problems met on resume are logged. */
    private readonly logName: string,
  ) {}

  live(id: string): Agent | undefined {
    return this.ctx.agents.get(id)
  }

  /** The live agent of `id`, resuming the stored session if needed. */
  async agent(id: string): Promise<Agent> {
    // A session being unloaded is resumed once its close is done.
    await this.unloading.get(id)?.catch(() => {})
    const { agent, problems } = await this.ctx.conversations.resume(id)
    for (const problem of problems) this.ctx.logger(this.logName).warn(problem)
    return agent
  }

  /** Disposes an agent; a request for its session meanwhile waits for the close, then resumes it. */
  unload(agent: Agent): Promise<void> {
    const closing = this.ctx.agents.dispose(agent).finally(() => this.unloading.delete(agent.id))
    this.unloading.set(agent.id, closing)
    return closing
  }

  /** The live session, else the stored log read as it is. */
  async view(id: string): Promise<LogView> {
    const agent = this.live(id)
    const session = agent?.session ?? this.ctx.sessions.get(id)
    if (session)
      return { meta: session.meta, events: this.ctx.sessions.publishedEvents(session), ...(agent ? { agent } : {}) }
    const stored = await this.readStored(id)
    // It may have been resumed while the log was read: the live copy is newer.
    const now = this.ctx.sessions.get(id)
    if (now)
      return {
        meta: now.meta,
        events: this.ctx.sessions.publishedEvents(now),
        ...(this.live(id) ? { agent: this.live(id) } : {}),
      }
    return stored
  }

  /** Reads the stored log of `id` through the recent reads (no storage: an unknown session). */
  async readLog(id: string): Promise<OpenedLog> {
    const persistence = this.ctx.get('sessionPersistence')
    if (!persistence) throw notFound(id, NEITHER)
    return this.recentReads.read(id, () => persistence.open(id as SessionId))
  }

  async readStored(id: string): Promise<LogView> {
    try {
      const opened = await this.readLog(id)
      return { meta: opened.meta, events: opened.events }
    } catch (error) {
      if (error instanceof Error && error.name === 'SessionNotFoundError') throw notFound(id, NEITHER)
      throw error
    }
  }

  /**
   * One page of top-level sessions, newest first (`ctx.conversations.list`).
   * The first page of an unfiltered list also shows the live sessions as
   * they are now (a new one may not be indexed yet).
   */
  async list(q: { cwd?: string; query?: string; limit: number; cursor?: string }) {
    const page = await this.ctx.conversations.list({ ...q, includeChildren: false })
    let sessions = page.sessions
    if (!q.cursor && !q.query) {
      const live = new Map(this.liveSummaries(q.cwd).map((s) => [s.sessionId, s]))
      sessions = sessions.map((s) => {
        const fresh = live.get(s.sessionId)
        live.delete(s.sessionId)
        return fresh ? { ...s, ...fresh } : s
      })
      sessions = [...live.values(), ...sessions].sort((a, b) => b.updatedAt - a.updatedAt)
    }
    return { sessions, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) }
  }

  /** The folders sessions ran in: the live ones (latest first), then the stored ones, then `fallback`; each once. */
  async workspaces(fallback: string): Promise<string[]> {
    const catalog = this.ctx.get('sessionCatalog')
    const persistence = this.ctx.get('sessionPersistence')
    const cwds = catalog
      ? (await catalog.list({ limit: 500 })).sessions.map((s) => s.cwd)
      : persistence
        ? (await persistence.list()).map((s) => s.cwd)
        : []
    const live = this.ctx.sessions
      .list()
      .sort((a, b) => (b.events.at(-1)?.time ?? b.meta.createdAt) - (a.events.at(-1)?.time ?? a.meta.createdAt))
      .map((s) => s.meta.cwd)
    return [...new Set([...live, ...cwds, fallback])]
  }

  /** Live top-level sessions as list entries. */
  private liveSummaries(cwd?: string) {
    const out: ConversationSummary[] = []
    for (const session of this.ctx.sessions.list()) {
      if (session.meta.parentSession || (cwd && session.meta.cwd !== cwd)) continue
      const title = session.last('session/title')?.data.title ?? session.meta.title
      out.push({
        sessionId: session.id,
        ...(title ? { title } : {}),
        cwd: session.meta.cwd,
        createdAt: session.meta.createdAt,
        updatedAt: session.events.at(-1)?.time ?? session.meta.createdAt,
        running: this.live(session.id)?.status === 'running',
      })
    }
    return out
  }
}

/** Whether `sessionId` is `ancestor` or one of its descendants (a subagent's approval shows in its parent's view). */
export function within(ctx: Context, sessionId: string, ancestor: string): boolean {
  let id: string | undefined = sessionId
  for (let depth = 0; id && depth < 32; depth++) {
    if (id === ancestor) return true
    id = ctx.sessions.get(id)?.meta.parentSession
  }
  return false
}
