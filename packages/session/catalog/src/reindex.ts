import type { SessionId } from '@dsh/session'
import { type ListOptions, type OpenedLog, SessionNotFoundError, type StoredSession } from '@dsh/session-persistence'
import { digestEvents, type SessionDigest } from './digest.ts'
import type { CatalogStore, LogFileInfo } from './store.ts'

/** Where the logs come from: `ctx.sessionPersistence`, or the JSONL provider on a bare context in the CLI. */
export interface LogSource {
  list(options?: ListOptions): Promise<StoredSession[]>
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

/**
 * Logs modified this long before the last catch-up are looked at again:
 * some file systems keep mtimes in whole seconds.
 */
export const MTIME_SLACK_MS = 2000

/** Reads and indexes `stored` logs in batches; resolves with the number indexed, or undefined when stopped. */
async function indexLogs(
  store: CatalogStore,
  source: LogSource,
  stored: readonly StoredSession[],
  options: BuildOptions,
): Promise<number | undefined> {
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
        if (!(error instanceof SessionNotFoundError))
          options.onProblem(`skipped session ${session.id}: ${describe(error)}`)
        continue
      }
      if (log.problems.length) {
        const more = log.problems.length > 1 ? ` (and ${log.problems.length - 1} more)` : ''
        options.onProblem(
          `session ${session.id}: indexed the readable lines; skipped ${(log.problems[0] as { message: string }).message}${more}`,
        )
      }
      batch.push(digestLog(log, session))
      if (batch.length >= options.batchSize) write()
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker))
  if (options.stopped?.()) return undefined
  if (batch.length) write()
  return indexed
}

/** A pass over the stored logs; resolves with the number of sessions indexed, or undefined when stopped. */
type LogPass = (store: CatalogStore, source: LogSource, options: BuildOptions) => Promise<number | undefined>

/**
 * Empties the catalog and indexes every stored log. A log that cannot be
 * read is reported and skipped; one with unreadable lines is indexed from
 * the lines that can be read, and reported. The catalog counts as built only
 * when every log was visited. Resolves with the number of sessions indexed,
 * or undefined when stopped.
 */
export const buildFromLogs: LogPass = async (store, source, options) => {
  const started = Date.now()
  store.reset()
  const indexed = await indexLogs(store, source, await source.list(), options)
  if (indexed === undefined) return undefined
  store.markSynced(started)
  store.markBuilt()
  return indexed
}

/**
 * Indexes the logs modified since the catalog last caught up (or was
 * built) that it does not hold as they are: sessions written by a profile
 * without the catalog (headless runs), or by another process. Resolves with
 * the number of sessions indexed, or undefined when stopped.
 */
export const catchUpWithLogs: LogPass = async (store, source, options) => {
  const started = Date.now()
  const changed = await source.list({ changedSince: store.syncedAt() - MTIME_SLACK_MS })
  const stale = changed.filter(
    (session) => !store.hasLog(session.id, { file: session.file, bytes: session.bytes, mtime: session.updatedAt }),
  )
  const indexed = await indexLogs(store, source, stale, options)
  if (indexed === undefined) return undefined
  store.markSynced(started)
  return indexed
}
