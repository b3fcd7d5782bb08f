import type { Agent } from '@dsh/agent'
import { ConversationError, type ConversationSummary, type SessionView as Shown } from '@dsh/conversations'
import { assertNever, type Context } from '@dsh/cordis'
import type { SessionEvent, SessionId, SessionMeta } from '@dsh/session'
import { type OpenedLog, SessionNotFoundError } from '@dsh/session-persistence'
import { sessionIdProblem } from '@dsh/sdk-protocol'
import { HttpError } from '../http.ts'
import { RecentReads } from './recent-reads.ts'
import type { WebSettings } from './settings.ts'

/** A session's log read for display: live, or opened from its stored log without resuming it. */
export interface SessionView {
  meta: SessionMeta
  events: readonly SessionEvent[]
  agent?: Agent
}

/** A 400 naming `parameter`, in the shape `parseWith` gives (`details.issues`). */
export function badParameter(parameter: string, message: string): HttpError {
  return new HttpError(400, 'bad-request', `${parameter}: ${message}`, { issues: [{ path: parameter, message }] })
}

/** `id` when it can name a session, else a 400 naming the parameter it came in (a path like `../../etc/passwd`, a wrong shape). */
export function checkedSessionId(id: string, parameter = 'id'): string {
  const problem = sessionIdProblem(id)
  if (problem) throw badParameter(parameter, `${JSON.stringify(id)} ${problem}`)
  return id
}

/** `model` when the provider's catalog offers it (or has no catalog), else a 400 naming `field`. */
export function checkedModel(
  ctx: Context,
  model: string,
  field = 'model',
  provider = ctx.agents.defaults().provider,
): string {
  const offered =
    ctx
      .get('llm')
      ?.models(provider)
      .map((m) => m.id) ?? []
  if (offered.length > 0 && !offered.includes(model)) {
    throw badParameter(field, `unknown model ${JSON.stringify(model)}; ${provider} offers ${offered.join(', ')}`)
  }
  return model
}

export function unknownSession(id: string): HttpError {
  return new HttpError(404, 'unknown-session', `no session ${JSON.stringify(id)}: it is neither open nor stored`)
}

/** The API's name of a conversation service argument. */
const FIELDS: Record<string, string> = { preset: 'permissionPreset' }

/** A conversation service error as the API's HTTP error (see API.md); any other error as it is. */
export function httpError(error: unknown): unknown {
  if (!(error instanceof ConversationError)) return error
  const field = error.details.field && (FIELDS[error.details.field] ?? error.details.field)
  switch (error.kind) {
    case 'not-found':
      return new HttpError(404, 'unknown-session', error.message)
    case 'busy':
      return new HttpError(409, 'busy', error.message)
    case 'invalid':
      return field ? badParameter(field, error.message) : new HttpError(400, 'bad-request', error.message)
    case 'unavailable':
      return new HttpError(503, 'unavailable', error.message)
    default:
      return assertNever(error.kind)
  }
}

/** The service's view of a session in the API's shape (`permissionPreset`, never missing). */
export function described({ preset, ...view }: Shown): Record<string, unknown> {
  return { ...view, permissionPreset: preset ?? 'workspace-write' }
}

/**
 * The web's side of sessions over `ctx.conversations`: resumes wait for an
 * idle unload in progress, stored logs are read through the recent-reads
 * cache, new sessions get the web settings' preset and network, and the
 * list shows live sessions fresher than their stored copy.
 */
export class SessionAccess {
  private readonly recentReads = new RecentReads()
  /** Agents being unloaded: a request for one waits until its session is closed, then resumes it. */
  private readonly unloading = new Map<string, Promise<void>>()

  constructor(
    private readonly ctx: Context,
    /** The preset and network new web sessions get, if the web settings name them. */
    readonly webDefaults: () => WebSettings,
  ) {}

  live(id: string): Agent | undefined {
    return this.ctx.agents.get(id)
  }

  /** The live agent of `id`, resuming the stored session if needed. */
  async agent(id: string): Promise<Agent> {
    // A session being unloaded is resumed once its close is done.
    await this.unloading.get(id)?.catch(() => {})
    const { agent, problems } = await this.ctx.conversations.resume(id)
    for (const problem of problems) this.ctx.logger('web-api').warn(problem)
    return agent
  }

  /** Disposes an agent; a request for its session meanwhile waits for the close, then resumes it. */
  unload(agent: Agent): Promise<void> {
    const closing = this.ctx.agents.dispose(agent).finally(() => this.unloading.delete(agent.id))
    this.unloading.set(agent.id, closing)
    return closing
  }

  /** The live session, else the stored log read as it is. */
  async view(id: string): Promise<SessionView> {
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
    if (!persistence) throw unknownSession(id)
    return this.recentReads.read(id, () => persistence.open(id as SessionId))
  }

  async readStored(id: string): Promise<SessionView> {
    try {
      const opened = await this.readLog(id)
      return { meta: opened.meta, events: opened.events }
    } catch (error) {
      if (error instanceof SessionNotFoundError) throw unknownSession(id)
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
