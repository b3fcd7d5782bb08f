import type { Statement } from 'better-sqlite3'
import { joinCjk, separateCjk } from './cjk.ts'
import type { SessionDigest } from './digest.ts'
import { decodeCursor, encodeCursor, matchExpression } from './query.ts'
import { CHUNK_BITS, CHUNKS_PER_SESSION, type Db, markBuilt, resetSchema } from './schema.ts'
import type { CatalogEntry, ListPage, ListQuery, SearchHit, SearchOptions } from './types.ts'

export interface StoreOptions {
  /** A text chunk grows until it holds this many characters; then a new one starts. */
  chunkChars: number
  snippetOpen: string
  snippetClose: string
  snippetTokens: number
  defaultLimit: number
  maxLimit: number
}

/** Where a session's rows are, and the text chunk that new text goes to. */
export interface IndexedSession {
  num: number
  title: string | undefined
  /** Index of the last text chunk (0: none yet). */
  chunk: number
  chunkChars: number
}

/** Facts about the stored log, kept for maintenance. */
export interface LogFileInfo {
  file: string
  bytes: number
  mtime: number
}

interface SessionRow {
  num: number
  id: string
  title: string | null
  preview: string | null
  cwd: string
  created_at: number
  updated_at: number
  parent: string | null
  user_messages: number
  assistant_messages: number
  input_tokens: number
  output_tokens: number
}

const COLUMNS =
  's.num, s.id, s.title, s.preview, s.cwd, s.created_at, s.updated_at, s.parent, s.user_messages, s.assistant_messages, s.input_tokens, s.output_tokens'
const CHUNK_SEPARATOR = '\n\n'

function entryOf(row: SessionRow): CatalogEntry {
  const entry: CatalogEntry = {
    sessionId: row.id,
    cwd: row.cwd,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    userMessages: row.user_messages,
    assistantMessages: row.assistant_messages,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
  }
  if (row.title !== null) entry.title = row.title
  if (row.preview !== null) entry.preview = row.preview
  if (row.parent !== null) entry.parentSession = row.parent
  return entry
}

function checkLimit(value: number | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`invalid limit ${JSON.stringify(value)}: use a whole number from 1 to ${max}`)
  return Math.min(value, max)
}

/**
 * The catalog's tables: one row per session and the full-text index of its
 * title and text. Synchronous (better-sqlite3); the service and the CLI
 * both build on it.
 */
export class CatalogStore {
  private readonly statements = new Map<string, Statement>()

  constructor(
    readonly db: Db,
    private readonly options: StoreOptions,
  ) {}

  private sql(text: string): Statement {
    let statement = this.statements.get(text)
    if (!statement) {
      statement = this.db.prepare(text)
      this.statements.set(text, statement)
    }
    return statement
  }

  transaction<T>(task: () => T): T {
    return this.db.transaction(task)()
  }

  /** Empties every table; the catalog counts as unbuilt until `markBuilt`. */
  reset(): void {
    this.statements.clear()
    resetSchema(this.db)
  }

  markBuilt(): void {
    markBuilt(this.db)
  }

  /** When the catalog last caught up with the logs (epoch ms); 0 when it never did. */
  syncedAt(): number {
    const row = this.sql(`SELECT value FROM catalog_state WHERE key = 'synced_at'`).get() as
      | { value: number }
      | undefined
    return row?.value ?? 0
  }

  /** Records that every log modified before `time` (epoch ms) is indexed. */
  markSynced(time: number): void {
    this.sql(
      `INSERT INTO catalog_state (key, value) VALUES ('synced_at', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    ).run(Math.round(time))
  }

  /** Whether the session was indexed from exactly this log file (same path, size and mtime). */
  hasLog(sessionId: string, file: LogFileInfo): boolean {
    const row = this.sql('SELECT log_file, log_bytes, log_mtime FROM sessions WHERE id = ?').get(sessionId) as
      | { log_file: string | null; log_bytes: number | null; log_mtime: number | null }
      | undefined
    return row?.log_file === file.file && row.log_bytes === file.bytes && row.log_mtime === Math.round(file.mtime)
  }

  close(): void {
    this.statements.clear()
    if (this.db.open) this.db.close()
  }

  /** Writes a session from scratch: its row, its title and `texts`, replacing whatever was indexed for it. */
  replace(digest: SessionDigest, texts: readonly string[], file?: LogFileInfo): IndexedSession {
    const old = this.sql('SELECT num, chunks FROM sessions WHERE id = ?').get(digest.sessionId) as
      | { num: number; chunks: number }
      | undefined
    if (old) this.deleteRows(old.num, old.chunks)
    const num = old?.num ?? this.upsert(digest, 0)
    if (file)
      this.sql('UPDATE sessions SET log_file = ?, log_bytes = ?, log_mtime = ? WHERE num = ?').run(
        file.file,
        file.bytes,
        Math.round(file.mtime),
        num,
      )
    const indexed: IndexedSession = { num, title: undefined, chunk: 0, chunkChars: 0 }
    this.update(indexed, digest, texts)
    return indexed
  }

  /** Writes the session's row as `digest` says and appends `texts` to its index. */
  update(indexed: IndexedSession, digest: SessionDigest, texts: readonly string[]): void {
    const titleRow = indexed.num * CHUNKS_PER_SESSION
    if (digest.title !== indexed.title) {
      this.sql('DELETE FROM text_index WHERE rowid = ?').run(titleRow)
      if (digest.title)
        this.sql(`INSERT INTO text_index (rowid, title, body) VALUES (?, ?, '')`).run(
          titleRow,
          separateCjk(digest.title),
        )
      indexed.title = digest.title
    }
    this.appendText(indexed, texts)
    indexed.num = this.upsert(digest, indexed.chunk)
  }

  /** Whether `indexed` still matches the stored rows: another process may have rebuilt the catalog meanwhile. */
  isCurrent(sessionId: string, indexed: IndexedSession): boolean {
    const row = this.sql('SELECT num, chunks FROM sessions WHERE id = ?').get(sessionId) as
      | { num: number; chunks: number }
      | undefined
    return row?.num === indexed.num && row.chunks === indexed.chunk
  }

  /** Deletes the title row and text chunks `1..chunks` of session `num`. */
  private deleteRows(num: number, chunks: number): void {
    const remove = this.sql('DELETE FROM text_index WHERE rowid = ?')
    for (let k = 0; k <= chunks; k++) remove.run(num * CHUNKS_PER_SESSION + k)
  }

  /** Adds to the current chunk up to `chunkChars`, then starts new chunks; a longer text gets a chunk of its own. */
  private appendText(indexed: IndexedSession, original: readonly string[]): void {
    const texts = original.map(separateCjk)
    let grow = ''
    const fresh: string[] = []
    let chars = indexed.chunk > 0 ? indexed.chunkChars : Number.POSITIVE_INFINITY
    for (const text of texts) {
      if (!text) continue
      const added = text.length + CHUNK_SEPARATOR.length
      if (chars + added <= this.options.chunkChars) {
        if (fresh.length) fresh[fresh.length - 1] += CHUNK_SEPARATOR + text
        else grow += CHUNK_SEPARATOR + text
        chars += added
      } else {
        fresh.push(text)
        chars = text.length
      }
    }
    const base = indexed.num * CHUNKS_PER_SESSION
    if (grow) {
      const changed = this.sql('UPDATE text_index SET body = body || ? WHERE rowid = ?').run(
        grow,
        base + indexed.chunk,
      ).changes
      // The row is gone: the text starts a new chunk.
      if (changed === 0) fresh.unshift(grow.slice(CHUNK_SEPARATOR.length))
    }
    for (const text of fresh) {
      if (indexed.chunk + 1 >= CHUNKS_PER_SESSION) break
      indexed.chunk += 1
      this.sql(`INSERT INTO text_index (rowid, title, body) VALUES (?, '', ?)`).run(base + indexed.chunk, text)
    }
    indexed.chunkChars = fresh.length ? (fresh.at(-1) as string).length : indexed.chunkChars + grow.length
  }

  private upsert(digest: SessionDigest, chunks: number): number {
    const row = this.sql(
      `INSERT INTO sessions (id, title, preview, cwd, created_at, updated_at, parent, user_messages, assistant_messages, input_tokens, output_tokens, chunks)
       VALUES (@id, @title, @preview, @cwd, @createdAt, @updatedAt, @parent, @userMessages, @assistantMessages, @inputTokens, @outputTokens, @chunks)
       ON CONFLICT (id) DO UPDATE SET title = excluded.title, preview = excluded.preview, cwd = excluded.cwd, created_at = excluded.created_at,
         updated_at = excluded.updated_at, parent = excluded.parent, user_messages = excluded.user_messages,
         assistant_messages = excluded.assistant_messages, input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
         chunks = excluded.chunks
       RETURNING num`,
    ).get({
      chunks,
      id: digest.sessionId,
      title: digest.title ?? null,
      preview: digest.preview ?? null,
      cwd: digest.cwd,
      createdAt: digest.createdAt,
      updatedAt: digest.updatedAt,
      parent: digest.parentSession ?? null,
      userMessages: digest.userMessages,
      assistantMessages: digest.assistantMessages,
      inputTokens: digest.inputTokens,
      outputTokens: digest.outputTokens,
    }) as { num: number }
    return row.num
  }

  /** Forgets a session; whether it was indexed. */
  remove(sessionId: string): boolean {
    const row = this.sql('SELECT num, chunks FROM sessions WHERE id = ?').get(sessionId) as
      | { num: number; chunks: number }
      | undefined
    if (!row) return false
    this.transaction(() => {
      this.deleteRows(row.num, row.chunks)
      this.sql('DELETE FROM sessions WHERE num = ?').run(row.num)
    })
    return true
  }

  /** The ids of the sessions whose parent is `sessionId` (its subagents). */
  children(sessionId: string): string[] {
    return (this.sql('SELECT id FROM sessions WHERE parent = ?').all(sessionId) as { id: string }[]).map(
      (row) => row.id,
    )
  }

  get(sessionId: string): CatalogEntry | undefined {
    const row = this.sql(`SELECT ${COLUMNS} FROM sessions s WHERE s.id = ?`).get(sessionId) as SessionRow | undefined
    return row && entryOf(row)
  }

  /** Newest first, a page at a time; `query` keeps the sessions whose title, id or folder contains it, or whose text holds every word. */
  list(query: ListQuery = {}): ListPage {
    const limit = checkLimit(query.limit, this.options.defaultLimit, this.options.maxLimit)
    const where: string[] = []
    const params: unknown[] = []
    if (query.cwd !== undefined) {
      where.push('s.cwd = ?')
      params.push(query.cwd)
    }
    if (!query.includeChildren) where.push('s.parent IS NULL')
    if (query.cursor !== undefined) {
      const after = decodeCursor(query.cursor)
      // A row value, so that SQLite seeks the index instead of scanning from the newest entry.
      where.push('(s.updated_at, s.id) < (?, ?)')
      params.push(after.updatedAt, after.sessionId)
    }
    if (query.query !== undefined) {
      // The one definition of a session search: its title, id or folder contains the text, or its text holds every word.
      const match = matchExpression(query.query)
      if (!query.query.trim()) return { sessions: [] }
      const needle = `%${query.query.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
      const plain = ['s.title', 's.id', 's.cwd'].map((column) => `${column} LIKE ? ESCAPE '\\'`)
      params.push(needle, needle, needle)
      if (match !== undefined) {
        plain.push(`s.num IN (SELECT rowid >> ${CHUNK_BITS} FROM text_index WHERE text_index MATCH ?)`)
        params.push(match)
      }
      where.push(`(${plain.join(' OR ')})`)
    }
    const rows = this.sql(
      `SELECT ${COLUMNS} FROM sessions s ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY s.updated_at DESC, s.id DESC LIMIT ?`,
    ).all(...params, limit + 1) as SessionRow[]
    const page: ListPage = { sessions: rows.slice(0, limit).map(entryOf) }
    const last = rows.length > limit ? page.sessions.at(-1) : undefined
    if (last) page.nextCursor = encodeCursor({ updatedAt: last.updatedAt, sessionId: last.sessionId })
    return page
  }

  /** The sessions that hold every word of `text`, best match first (bm25), each with a snippet of its best chunk. */
  search(text: string, options: SearchOptions = {}): SearchHit[] {
    const limit = checkLimit(options.limit, this.options.defaultLimit, this.options.maxLimit)
    const match = matchExpression(text)
    if (match === undefined) return []
    const params: unknown[] = [match]
    let filter = ''
    if (options.cwd !== undefined) {
      filter = 'WHERE s.cwd = ?'
      params.push(options.cwd)
    }
    // `rank` is bm25 with the title weighted (set up with the schema). SQLite fills the
    // bare column `rowid` from the row that holds min(): the session's best chunk.
    const rows = this.sql(
      `SELECT ${COLUMNS}, hits.hit FROM (
         SELECT rowid >> ${CHUNK_BITS} AS num, rowid AS hit, min(rank) AS score
         FROM text_index WHERE text_index MATCH ? GROUP BY rowid >> ${CHUNK_BITS}
       ) hits JOIN sessions s ON s.num = hits.num ${filter}
       ORDER BY hits.score, s.updated_at DESC LIMIT ?`,
    ).all(...params, limit) as (SessionRow & { hit: number })[]
    const { snippetOpen, snippetClose, snippetTokens } = this.options
    const snippet = this.sql(
      `SELECT snippet(text_index, -1, ?, ?, '…', ?) AS text FROM text_index WHERE text_index MATCH ? AND rowid = ?`,
    )
    return rows.map((row) => {
      const found = snippet.get(snippetOpen, snippetClose, snippetTokens, match, row.hit) as
        | { text: string }
        | undefined
      return { ...entryOf(row), snippet: joinCjk(found?.text ?? '', snippetOpen, snippetClose) }
    })
  }

  /** How many sessions are indexed. */
  count(): number {
    return (this.sql('SELECT count(*) AS n FROM sessions').get() as { n: number }).n
  }
}
