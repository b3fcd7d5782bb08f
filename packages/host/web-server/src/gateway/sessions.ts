import type { Agent } from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import type { PermissionPreset } from '@dsh/permission'
import { Session, type SessionEvent, type SessionId, type SessionMeta } from '@dsh/session'
import type { CatalogEntry } from '@dsh/session-catalog'
import { SessionBusyError, type SessionHolder, SessionNotFoundError } from '@dsh/session-persistence'
import { sessionIdProblem } from '@dsh/sdk-protocol'
import { HttpError } from '../http.ts'
import { RecentReads } from './recent-reads.ts'
import type { WebSettings } from './settings.ts'

/** What the list needs of a stored session: a catalog entry, or the storage's own header. */
type StoredSummary = Pick<CatalogEntry, 'sessionId' | 'title' | 'cwd' | 'createdAt' | 'updatedAt' | 'parentSession'>

/** A session as the list shows it; `openIn` names another dsh process that has it open. */
export type SessionSummary = StoredSummary & { running: boolean; openIn?: SessionHolder }

/** A session read for display: live, or opened from its stored log without resuming it. */
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

/** A cursor this server did not hand out. */
export function badCursor(cursor: string): HttpError {
  return badParameter('cursor', `${JSON.stringify(cursor)} is not a cursor this server returned; pass the nextCursor of the previous page`)
}

/** `model` when the provider's catalog offers it (or has no catalog), else a 400 naming `field`. */
export function checkedModel(ctx: Context, model: string, field = 'model'): string {
  const provider = ctx.agents.defaults().provider
  const offered = ctx.get('llm')?.models(provider).map((m) => m.id) ?? []
  if (offered.length > 0 && !offered.includes(model)) {
    throw badParameter(field, `unknown model ${JSON.stringify(model)}; ${provider} offers ${offered.join(', ')}`)
  }
  return model
}

export function unknownSession(id: string): HttpError {
  return new HttpError(404, 'unknown-session', `no session ${JSON.stringify(id)}: it is neither open nor stored`)
}

/** The title from the log: the last `session/title` event, else the one in the header. */
export function titleOf(meta: SessionMeta, events: readonly SessionEvent[]): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if ((event.type as string) === 'session/title') {
      const title = (event.data as { title?: unknown }).title
      if (typeof title === 'string') return title
    }
  }
  return meta.title
}

function lastHeader(events: readonly SessionEvent[]): SessionEvent<'request/header'>['data'] | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if (event.type === 'request/header') return event.data as SessionEvent<'request/header'>['data']
  }
  return undefined
}

/**
 * Finds sessions for the API: live agents first, then stored logs (read
 * without resuming), and resumes a stored session when it must run, once
 * even when several requests ask at the same time.
 */
export class SessionAccess {
  private readonly resuming = new Map<string, Promise<Agent>>()
  private readonly recentReads = new RecentReads()
  /** Agents being unloaded: a request for one waits until its session is closed, then resumes it. */
  private readonly unloading = new Map<string, Promise<void>>()

  constructor(
    private readonly ctx: Context,
    /** The preset new and resumed web sessions get, if the web settings name one. */
    private readonly webDefaults: () => WebSettings,
  ) {}

  private defaultPreset(): PermissionPreset | undefined {
    return this.webDefaults().permissionPreset
  }

  /** A new session gets the network setting the web settings name, if any. */
  applyDefaultNetwork(id: string): void {
    const network = this.webDefaults().network
    const permission = this.ctx.get('permission')
    if (network && permission) permission.setNetwork(id, network)
  }

  live(id: string): Agent | undefined {
    return this.ctx.agents.get(id)
  }

  /** The live agent of `id`, resuming the stored session if needed. */
  async agent(id: string): Promise<Agent> {
    // A session being unloaded is resumed once its close is done.
    await this.unloading.get(id)?.catch(() => {})
    const live = this.live(id)
    if (live) return live
    let pending = this.resuming.get(id)
    if (!pending) {
      pending = this.resume(id).finally(() => this.resuming.delete(id))
      this.resuming.set(id, pending)
    }
    return pending
  }

  /** Disposes an agent; a request for its session meanwhile waits for the close, then resumes it. */
  unload(agent: Agent): Promise<void> {
    const closing = this.ctx.agents.dispose(agent).finally(() => this.unloading.delete(agent.id))
    this.unloading.set(agent.id, closing)
    return closing
  }

  private async resume(id: string): Promise<Agent> {
    if (this.ctx.sessions.get(id)) {
      throw new HttpError(409, 'busy', `session ${id} is open in this process without an agent (another surface holds it); try again later`)
    }
    try {
      const { agent, problems } = await this.ctx.agents.resume(id as SessionId)
      for (const problem of problems) this.ctx.logger('web-api').warn(problem)
      this.applyDefaultPreset(agent.id)
      return agent
    } catch (error) {
      if (error instanceof SessionNotFoundError) throw unknownSession(id)
      if (error instanceof SessionBusyError) throw new HttpError(409, 'busy', error.message)
      throw error
    }
  }

  applyDefaultPreset(id: string): void {
    const preset = this.defaultPreset()
    const permission = this.ctx.get('permission')
    if (preset && permission) permission.setPreset(id, preset)
  }

  /** The live session, else the stored log read as it is. */
  async view(id: string): Promise<SessionView> {
    const agent = this.live(id)
    const session = agent?.session ?? this.ctx.sessions.get(id)
    if (session) return { meta: session.meta, events: this.ctx.sessions.publishedEvents(session), ...(agent ? { agent } : {}) }
    const stored = await this.readStored(id)
    // It may have been resumed while the log was read: the live copy is newer.
    const now = this.ctx.sessions.get(id)
    if (now) return { meta: now.meta, events: this.ctx.sessions.publishedEvents(now), ...(this.live(id) ? { agent: this.live(id) } : {}) }
    return stored
  }

  async readStored(id: string): Promise<SessionView> {
    const persistence = this.ctx.get('sessionPersistence')
    if (!persistence) throw unknownSession(id)
    try {
      const opened = await this.recentReads.read(id, () => persistence.open(id as SessionId))
      return { meta: opened.meta, events: opened.events }
    } catch (error) {
      if (error instanceof SessionNotFoundError) throw unknownSession(id)
      throw error
    }
  }

  /** A detached copy of a stored or live session, for forking without resuming it. */
  async snapshot(id: string): Promise<Session> {
    const live = this.ctx.sessions.get(id)
    if (live) return live
    const view = await this.view(id)
    return new Session(view.meta, view.events, () => {})
  }

  describe(view: SessionView): Record<string, unknown> {
    const { meta, events, agent } = view
    const header = lastHeader(events)
    const model = agent?.options.model ?? header?.model
    const reasoningEffort = agent ? agent.options.reasoningEffort : header?.reasoningEffort
    const title = titleOf(meta, events)
    return {
      sessionId: meta.id,
      ...(title ? { title } : {}),
      cwd: meta.cwd,
      createdAt: meta.createdAt,
      ...(meta.parentSession ? { parentSession: meta.parentSession } : {}),
      ...(meta.forkedFrom ? { forkedFrom: meta.forkedFrom } : {}),
      running: agent?.status === 'running',
      ...(model ? { model } : {}),
      ...(reasoningEffort ? { reasoningEffort } : {}),
      permissionPreset: this.ctx.get('permission')?.preset(meta.id) ?? this.defaultPreset() ?? 'workspace-write',
      ...(this.ctx.get('permission') ? { network: this.ctx.get('permission')?.network(meta.id) } : {}),
    }
  }

  /** Live top-level sessions as list entries (they may not be stored or indexed yet). */
  liveSummaries(cwd?: string): SessionSummary[] {
    const out: SessionSummary[] = []
    for (const session of this.ctx.sessions.list()) {
      if (session.meta.parentSession || (cwd && session.meta.cwd !== cwd)) continue
      const title = titleOf(session.meta, session.events)
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

  summary(entry: StoredSummary): SessionSummary {
    return {
      sessionId: entry.sessionId,
      ...(entry.title ? { title: entry.title } : {}),
      cwd: entry.cwd,
      createdAt: entry.createdAt,
      updatedAt: entry.updatedAt,
      ...(entry.parentSession ? { parentSession: entry.parentSession } : {}),
      running: this.live(entry.sessionId)?.status === 'running',
    }
  }

  /** One page of stored sessions, newest first: from the catalog, else from the storage's own listing. */
  async list(q: { cwd?: string; query?: string; limit: number; cursor?: string }): Promise<{ sessions: SessionSummary[]; nextCursor?: string }> {
    const catalog = this.ctx.get('sessionCatalog')
    let page: { sessions: StoredSummary[]; nextCursor?: string }
    if (catalog) {
      try {
        page = await catalog.list({ ...q, includeChildren: false })
      } catch (error) {
        // The catalog refuses a cursor it cannot decode with a plain Error ("invalid cursor ..."), before any query runs.
        if (q.cursor !== undefined && error instanceof Error && error.message.startsWith('invalid cursor')) throw badCursor(q.cursor)
        throw error
      }
    } else {
      page = await this.listStored(q)
    }
    let sessions = page.sessions.map((entry) => this.summary(entry))
    if (!q.cursor && !q.query) {
      const live = new Map(this.liveSummaries(q.cwd).map((s) => [s.sessionId, s]))
      sessions = sessions.map((s) => {
        const fresh = live.get(s.sessionId)
        live.delete(s.sessionId)
        return fresh ? { ...s, ...fresh, ...(s.parentSession ? { parentSession: s.parentSession } : {}) } : s
      })
      sessions = [...live.values(), ...sessions].sort((a, b) => b.updatedAt - a.updatedAt)
    }
    // Sessions another dsh process has open: sending to one answers 409 until it lets go.
    const persistence = this.ctx.get('sessionPersistence')
    if (persistence) sessions = await persistence.withHolders(sessions)
    return { sessions, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) }
  }

  private async listStored(q: { cwd?: string; query?: string; limit: number; cursor?: string }): Promise<{ sessions: StoredSummary[]; nextCursor?: string }> {
    const persistence = this.ctx.get('sessionPersistence')
    if (!persistence) return { sessions: [] }
    const needle = q.query?.toLowerCase()
    const all = (await persistence.list()).filter(
      (s) => !s.parentSession && (!q.cwd || s.cwd === q.cwd) && (!needle || `${s.title ?? ''} ${s.id}`.toLowerCase().includes(needle)),
    )
    const start = q.cursor ? Number(q.cursor) : 0
    if (!Number.isSafeInteger(start) || start < 0) throw badCursor(q.cursor ?? '')
    const slice = all.slice(start, start + q.limit).map((s) => ({
      sessionId: s.id,
      ...(s.title ? { title: s.title } : {}),
      cwd: s.cwd,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
    }))
    const next = start + q.limit
    return { sessions: slice, ...(next < all.length ? { nextCursor: String(next) } : {}) }
  }
}
