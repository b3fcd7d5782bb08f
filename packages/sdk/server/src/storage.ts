import type { Context } from '@dsh/cordis'
import { invalidField, type SessionListResult, type SessionSummary } from '@dsh/sdk-protocol'
import { Session, type SessionEvent, type SessionId, type SessionMeta } from '@dsh/session'
import type { CatalogEntry } from '@dsh/session-catalog'

/** A catalog entry, or a stored header (which also knows what a fork came from). */
type Listed = Pick<CatalogEntry, 'sessionId' | 'title' | 'cwd' | 'createdAt' | 'updatedAt' | 'parentSession'> & { forkedFrom?: string }

export interface StoredLog {
  meta: SessionMeta
  events: SessionEvent[]
  file: string
}

/** A stored log, or undefined when there is no storage or no log of that id. */
export async function openStored(ctx: Context, id: string): Promise<StoredLog | undefined> {
  const persistence = ctx.get('sessionPersistence')
  if (!persistence) return undefined
  try {
    return await persistence.open(id as SessionId)
  } catch (error) {
    if (error instanceof Error && error.name === 'SessionNotFoundError') return undefined
    throw error
  }
}

/** A stored log as a `Session` that is not registered with `ctx.sessions` (nothing it does is published or stored). */
export function detachedSession(ctx: Context, log: StoredLog): Session {
  return new Session(log.meta, ctx.sessions.checkLoadable(log.events, log.file), () => {})
}

const summary = (entry: Listed): SessionSummary => ({
  sessionId: entry.sessionId,
  title: entry.title ?? null,
  cwd: entry.cwd,
  createdAt: entry.createdAt,
  updatedAt: entry.updatedAt,
  ...(entry.parentSession ? { parentSession: entry.parentSession } : {}),
  ...(entry.forkedFrom ? { forkedFrom: entry.forkedFrom } : {}),
})

export interface ListQuery {
  cwd?: string
  query?: string
  limit: number
  cursor?: string
  includeChildren?: boolean
}

/**
 * Stored sessions, newest first, those with a parent (subagents) only with
 * `includeChildren`: from the SQLite catalog when it is loaded (full-text
 * `query`), else from the storage's headers, where `query` matches the title,
 * id or folder as plain text and the cursor is an offset.
 */
export async function listSessions(ctx: Context, q: ListQuery): Promise<SessionListResult> {
  const catalog = ctx.get('sessionCatalog')
  if (catalog) {
    const page = await catalog.list({ ...q })
    return { sessions: page.sessions.map(summary), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) }
  }
  const offset = q.cursor === undefined ? 0 : Number(q.cursor)
  if (!Number.isSafeInteger(offset) || offset < 0 || q.cursor === '') throw invalidField('session/list', 'cursor', 'not a cursor this server handed out')
  const persistence = ctx.get('sessionPersistence')
  const stored = persistence ? await persistence.list() : []
  const needle = q.query?.toLowerCase()
  const matching = stored.filter(
    (s) =>
      (q.includeChildren || !s.parentSession) &&
      (q.cwd === undefined || s.cwd === q.cwd) &&
      (!needle || [s.title ?? '', s.id, s.cwd].some((text) => text.toLowerCase().includes(needle))),
  )
  const end = offset + q.limit
  const sessions = matching.slice(offset, end).map((s) => summary({ ...s, sessionId: s.id }))
  return { sessions, ...(end < matching.length ? { nextCursor: String(end) } : {}) }
}
