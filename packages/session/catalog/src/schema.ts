import { chmodSync, closeSync, mkdirSync, openSync, rmSync } from 'node:fs'
import path from 'node:path'
import type Database from 'better-sqlite3'

export type Db = Database.Database
type Driver = typeof Database

/**
 * The layout of the tables below. `PRAGMA user_version` holds it once a
 * build from the logs has completed; any other value (an older or newer
 * layout, or a build that was cut short) means: drop everything and build
 * again. Bump it with every change to the DDL or to what gets indexed.
 */
export const SCHEMA_VERSION = 3

/**
 * Full-text rows of a session live at rowids `num * 2^CHUNK_BITS + k`:
 * `k = 0` holds the title, `k = 1..chunks` consecutive chunks of the
 * session's text, so `rowid >> CHUNK_BITS` is the session's `num`. Rows are
 * only ever addressed one rowid at a time: FTS5 scans the whole table for a
 * rowid range.
 */
export const CHUNK_BITS = 20
export const CHUNKS_PER_SESSION = 2 ** CHUNK_BITS

/** How much a word in the title weighs against one in the text, in bm25 ranking. */
const TITLE_WEIGHT = 2

const DDL = `
CREATE TABLE sessions (
  num INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  title TEXT,
  preview TEXT,
  cwd TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  parent TEXT,
  user_messages INTEGER NOT NULL,
  assistant_messages INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  chunks INTEGER NOT NULL DEFAULT 0,
  log_file TEXT,
  log_bytes INTEGER,
  log_mtime INTEGER
);
CREATE INDEX sessions_recent ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_cwd_recent ON sessions (cwd, updated_at DESC, id DESC);
CREATE TABLE catalog_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE VIRTUAL TABLE text_index USING fts5 (title, body, tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO text_index (text_index, rank) VALUES ('rank', 'bm25(${TITLE_WEIGHT}, 1.0)');
`

export interface OpenedDatabase {
  db: Db
  /** Whether the tables are empty or incomplete and must be built from the logs. */
  needsBuild: boolean
}

function createPrivateFile(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  closeSync(openSync(file, 'a', 0o600))
  chmodSync(file, 0o600)
}

function removeDatabaseFiles(file: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
}

function connect(Driver: Driver, file: string, busyTimeoutMs: number): Db {
  createPrivateFile(file)
  const db = new Driver(file, { timeout: busyTimeoutMs })
  try {
    db.pragma('journal_mode = WAL')
    // The catalog can always be rebuilt from the logs: a commit lost to a power cut costs nothing.
    db.pragma('synchronous = NORMAL')
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

/** Drops every table (the full-text table first, with its shadow tables) and creates the current layout, unbuilt. */
export function resetSchema(db: Db): void {
  db.transaction(() => {
    const names = (type: string) =>
      db.prepare(`SELECT name, sql FROM sqlite_schema WHERE type = ? AND name NOT LIKE 'sqlite_%'`).all(type) as {
        name: string
        sql: string | null
      }[]
    for (const table of names('table').filter((t) => /^CREATE VIRTUAL TABLE/i.test(t.sql ?? '')))
      db.exec(`DROP TABLE IF EXISTS "${table.name}"`)
    for (const view of names('view')) db.exec(`DROP VIEW IF EXISTS "${view.name}"`)
    for (const table of names('table')) db.exec(`DROP TABLE IF EXISTS "${table.name}"`)
    db.exec(DDL)
    db.pragma('user_version = 0')
  })()
}

export function markBuilt(db: Db): void {
  db.pragma(`user_version = ${SCHEMA_VERSION}`)
}

/**
 * Opens (creating it 0600 in a 0700 folder) the catalog database in WAL
 * mode. A file that is not a SQLite database is replaced; tables of another
 * schema version, or of a build that did not finish, are dropped and created
 * anew, and `needsBuild` says so. The native driver is loaded on the first
 * call, so importing this package costs no start-up time.
 */
export async function openDatabase(
  file: string,
  options: { busyTimeoutMs: number; onReplace?: (reason: string) => void },
): Promise<OpenedDatabase> {
  const Driver = (await import('better-sqlite3')).default
  let db: Db
  let version: number
  try {
    db = connect(Driver, file, options.busyTimeoutMs)
    try {
      version = db.pragma('user_version', { simple: true }) as number
      db.prepare('SELECT count(*) FROM sqlite_schema').get()
    } catch (error) {
      db.close()
      throw error
    }
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code !== 'SQLITE_NOTADB' && code !== 'SQLITE_CORRUPT') throw error
    options.onReplace?.(`${file} is not a readable SQLite database (${(error as Error).message}); creating it anew`)
    removeDatabaseFiles(file)
    db = connect(Driver, file, options.busyTimeoutMs)
    version = 0
  }
  if (version === SCHEMA_VERSION) return { db, needsBuild: false }
  if (version !== 0)
    options.onReplace?.(
      `${file} has schema version ${version}, this dsh uses ${SCHEMA_VERSION}; rebuilding it from the session logs`,
    )
  resetSchema(db)
  return { db, needsBuild: true }
}
