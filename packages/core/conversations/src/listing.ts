import type { Context } from '@dsh/cordis'
import type { CatalogEntry } from '@dsh/session-catalog'
import type { SessionHolder } from '@dsh/session-persistence'
import { invalid } from './errors.ts'

export interface ListQuery {
  /** Only sessions started in this folder. */
  cwd?: string
  /** Only sessions whose title, id or folder contains this text, or (with the catalog) whose text holds every word. */
  query?: string
  limit: number
  /** `nextCursor` of the previous page. */
  cursor?: string
  /** Also list subagent sessions (those with a parent). */
  includeChildren?: boolean
}

/** A stored session in a listing; `openIn` names another dsh process that has it open. */
export interface ConversationSummary {
  sessionId: string
  title?: string
  cwd: string
  createdAt: number
  updatedAt: number
  parentSession?: string
  forkedFrom?: string
  /** Whether its agent is running a turn in this process. */
  running: boolean
  openIn?: SessionHolder
}

export interface ListPage {
  sessions: ConversationSummary[]
  nextCursor?: string
}

type Listed = Pick<CatalogEntry, 'sessionId' | 'title' | 'cwd' | 'createdAt' | 'updatedAt' | 'parentSession'> & {
  forkedFrom?: string
}

const badCursor = (cursor: string) =>
  invalid(
    'cursor',
    `${JSON.stringify(cursor)} is not a cursor this server returned; pass the nextCursor of the previous page`,
  )

/**
 * Stored sessions, newest first, subagent sessions only with
 * `includeChildren`. From the SQLite catalog when it is loaded (which also
 * searches the text of the sessions), else from the storage's headers, where
 * `query` matches title, id or folder and the cursor is an offset. Each entry
 * says whether another dsh process holds it (`withHolders`).
 */
export async function listConversations(ctx: Context, q: ListQuery): Promise<ListPage> {
  const catalog = ctx.get('sessionCatalog')
  let page: { sessions: Listed[]; nextCursor?: string }
  if (catalog) {
    try {
      page = await catalog.list({ ...q })
    } catch (error) {
      // The catalog refuses a cursor it cannot decode with a plain Error ("invalid cursor ..."), before any query runs.
      if (q.cursor !== undefined && error instanceof Error && error.message.startsWith('invalid cursor'))
        throw badCursor(q.cursor)
      throw error
    }
  } else {
    page = await listStored(ctx, q)
  }
  const running = (id: string) => ctx.agents.get(id)?.status === 'running'
  const sessions = page.sessions.map((entry) => summary(entry, running(entry.sessionId)))
  const persistence = ctx.get('sessionPersistence')
  return {
    sessions: persistence ? await persistence.withHolders(sessions) : sessions,
    ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
  }
}

async function listStored(ctx: Context, q: ListQuery): Promise<{ sessions: Listed[]; nextCursor?: string }> {
  const offset = q.cursor === undefined ? 0 : Number(q.cursor)
  if (!Number.isSafeInteger(offset) || offset < 0 || q.cursor === '') throw badCursor(q.cursor ?? '')
  const persistence = ctx.get('sessionPersistence')
  const stored = persistence ? await persistence.list() : []
  const needle = q.query?.trim().toLowerCase()
  if (needle === '') return { sessions: [] }
  const matching = stored.filter(
    (s) =>
      (q.includeChildren || !s.parentSession) &&
      (q.cwd === undefined || s.cwd === q.cwd) &&
      (!needle || [s.title ?? '', s.id, s.cwd].some((text) => text.toLowerCase().includes(needle))),
  )
  const end = offset + q.limit
  const sessions = matching.slice(offset, end).map((s) => ({ ...s, sessionId: s.id }))
  return { sessions, ...(end < matching.length ? { nextCursor: String(end) } : {}) }
}

function summary(entry: Listed, running: boolean): ConversationSummary {
  return {
    sessionId: entry.sessionId,
    ...(entry.title ? { title: entry.title } : {}),
    cwd: entry.cwd,
    createdAt: entry.createdAt,
    updatedAt: entry.updatedAt,
    ...(entry.parentSession ? { parentSession: entry.parentSession } : {}),
    ...(entry.forkedFrom ? { forkedFrom: entry.forkedFrom } : {}),
    running,
  }
}
