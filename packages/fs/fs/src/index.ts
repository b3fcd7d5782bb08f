import { type Context, Schema, stringList } from '@dsh/cordis'
import { LocalFileSystem } from './local.ts'
import type { DenyListConfig } from './seam.ts'

export * from './seam.ts'
export { fromNodeError, LocalFileSystem } from './local.ts'
export { isWithin } from './resolve.ts'
export { checkedReal, recordChecked } from './checked.ts'
export { type ClientFiles, routeFilesThroughClient } from './client-files.ts'
export { DenyListError } from './deny.ts'

export const name = 'fs'

export type LocalFsConfig = DenyListConfig

export const Config: Schema<LocalFsConfig> = Schema.object({
  secretFiles: stringList(
    "dsh's own secret store, which no tool may read, list or change: absolute paths or ~/ paths, `*` within one segment. " +
      "The bundles set `$DSH_HOME/.credentials.yaml`, `$DSH_HOME/.env` and the profiles' copies.",
  ),
  denyRead: stringList(
    'More files or folders no tool may read, list or change, e.g. ~/.ssh, ~/.aws: absolute paths or ~/ paths.',
  ),
})

/** Provides `ctx.fs` on the local disk. */
export function apply(ctx: Context, config: LocalFsConfig) {
  ctx.plugin(LocalFileSystem, config)
}
