import type { SessionId } from '@dsh/session'
import { type OpenedLog, SessionNotFoundError, type StoredSession } from '@dsh/session-persistence'
import { digestEvents, type SessionDigest } from './digest.ts'
import type { CatalogStore, LogFileInfo } from './store.ts'

/** Where the logs come from: `ctx.sessionPersistence`, or the JSONL provider on a bare context in the CLI. */
export interface LogSource {
  list(): Promise<StoredSession[]>
  open(id: SessionId): Promise<OpenedLog>
}

export interface BuildOptions {
  /** Logs read at once. */
  concurrency: number
  /** Sessions written per transaction (each transaction holds the event loop). */
  batchSize: number
  /** A log that could not be read, or parts of one that were skipped. */
  onProblem(message: string): void
  /** Checked between sessions: true abandons the build, which stays unfinished. */
  stopped?(): boolean
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

interface Digested {
  digest: SessionDigest
  texts: string[]
  file?: LogFileInfo
}

function digestLog(log: OpenedLog, stored?: StoredSession): Digested {
  const digested: Digested = digestEvents(log.meta, log.events)
  if (stored) digested.file = { file: stored.file, bytes: stored.bytes, mtime: stored.updatedAt }
  return digested
}

/** Indexes one opened log, replacing what the catalog had for it. */
export function indexLog(store: CatalogStore, log: OpenedLog, stored?: StoredSession): void {
  const { digest, texts, file } = digestLog(log, stored)
  store.replace(digest, texts, file)
}

/**
 * Empties the catalog and indexes every stored log. A log that cannot be
 * read is reported and skipped; one with unreadable lines is indexed from
 * the lines that can be read, and reported. The catalog counts as built only
 * when every log was visited. Resolves with the number of sessions indexed,
 * or undefined when stopped.
 */
export async function buildFromLogs(store: CatalogStore, source: LogSource, options: BuildOptions): Promise<number | undefined> {
  store.reset()
  const stored = await source.list()
  let next = 0
  let indexed = 0
  let batch: Digested[] = []
  const write = () => {
    const logs = batch
    batch = []
    store.transaction(() => {
      for (const { digest, texts, file } of logs) store.replace(digest, texts, file)
    })
    indexed += logs.length
  }
  const worker = async () => {
    while (next < stored.length && !options.stopped?.()) {
      const session = stored[next++] as StoredSession
      let log: OpenedLog
      try {
        log = await source.open(session.id)
      } catch (error) {
        if (!(error instanceof SessionNotFoundError)) options.onProblem(`skipped session ${session.id}: ${describe(error)}`)
        continue
      }
      if (log.problems.length) {
        const more = log.problems.length > 1 ? ` (and ${log.problems.length - 1} more)` : ''
        options.onProblem(`session ${session.id}: indexed the readable lines; skipped ${(log.problems[0] as { message: string }).message}${more}`)
      }
      batch.push(digestLog(log, session))
      if (batch.length >= options.batchSize) write()
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker))
  if (options.stopped?.()) return undefined
  if (batch.length) write()
  store.markBuilt()
  return indexed
}
