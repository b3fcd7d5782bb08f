import path from 'node:path'
import { Schema, stringValue } from '@dsh/cordis'
import type { StoreOptions } from './store.ts'

export interface SessionCatalogConfig {
  path: string
  openDelayMs: number
  flushDelayMs: number
  chunkChars: number
  snippetTokens: number
  snippetOpen: string
  snippetClose: string
  defaultLimit: number
  maxLimit: number
  busyTimeoutMs: number
  reindexConcurrency: number
  reindexBatch: number
}

export const Config: Schema<Partial<SessionCatalogConfig>, SessionCatalogConfig> = Schema.object({
  path: Schema.string()
    .required()
    .description("Absolute path of the SQLite file (bundles set it to `!!js dshHomePath('catalog.sqlite')`)."),
  openDelayMs: Schema.natural()
    .default(1000)
    .description(
      'How long after start the database is opened (and rebuilt when missing), in milliseconds, so that loading SQLite stays off the start-up path. The first read or write opens it sooner.',
    ),
  flushDelayMs: Schema.natural()
    .default(1000)
    .description(
      'The first unindexed event of a session waits this long for others to share its write, in milliseconds. A turn end, a session flush or a read writes at once.',
    ),
  chunkChars: Schema.natural()
    .min(256)
    .default(16_000)
    .description('Characters of session text per full-text row; new text extends the last row up to this size.'),
  snippetTokens: Schema.natural().min(1).max(64).default(16).description('Words in a search snippet.'),
  snippetOpen: stringValue('Put before each matched word in a snippet.', '«'),
  snippetClose: stringValue('Put after each matched word in a snippet.', '»'),
  defaultLimit: Schema.natural()
    .min(1)
    .default(50)
    .description('Sessions per page of `list` and results of `search` when the caller gives no limit.'),
  maxLimit: Schema.natural()
    .min(1)
    .default(1000)
    .description('The largest limit a caller may ask for; larger ones are cut to it.'),
  busyTimeoutMs: Schema.natural()
    .default(5000)
    .description('How long a write waits for another dsh process holding the database, in milliseconds.'),
  reindexConcurrency: Schema.natural().min(1).default(4).description('Logs read at once while rebuilding.'),
  reindexBatch: Schema.natural()
    .min(1)
    .default(25)
    .description('Sessions written per transaction while rebuilding (each transaction holds the event loop).'),
})

/** Throws unless `file` is an absolute path; returns it normalized. */
export function checkCatalogPath(file: unknown): string {
  if (typeof file !== 'string' || !path.isAbsolute(file))
    throw new Error(`session-catalog: path must be an absolute path, got ${JSON.stringify(file)}`)
  return path.normalize(file)
}

/** The part of the config the tables need. */
export function storeOptions(config: SessionCatalogConfig): StoreOptions {
  const { chunkChars, snippetOpen, snippetClose, snippetTokens, defaultLimit, maxLimit } = config
  return { chunkChars, snippetOpen, snippetClose, snippetTokens, defaultLimit, maxLimit }
}
