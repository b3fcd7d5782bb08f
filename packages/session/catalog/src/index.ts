import type { Context } from '@dsh/cordis'
import { checkCatalogPath, type SessionCatalogConfig } from './config.ts'
import { SessionCatalog } from './service.ts'

export { Config, type SessionCatalogConfig } from './config.ts'
export { SessionCatalog } from './service.ts'
export { SCHEMA_VERSION } from './schema.ts'
export type { CatalogEntry, ListPage, ListQuery, SearchHit, SearchOptions } from './types.ts'

export const name = 'session-catalog'
export const inject = ['sessions', 'sessionPersistence']

/** Provides `ctx.sessionCatalog`: the SQLite index of stored sessions at `config.path`. */
export function apply(ctx: Context, config: SessionCatalogConfig) {
  checkCatalogPath(config.path) // fail this row, not only the inner service
  ctx.plugin(SessionCatalog, config)
}
