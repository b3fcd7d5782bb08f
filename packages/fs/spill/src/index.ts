import type { Context } from '@dsh/cordis'
import { type LocalSpillConfig, LocalSpillStore } from './local.ts'

export { type SpillFile, type SpillRequest, SpillStore } from './seam.ts'
export { Config, type LocalSpillConfig, LocalSpillStore } from './local.ts'

export const name = 'spill'

/**
 * Provides `ctx.spill`: private files under a 0700 folder, removed on
 * dispose unless `keepOnDispose`. Starting waits for the folder, so a bad
 * `root` fails this plugin.
 */
export async function apply(ctx: Context, config: LocalSpillConfig) {
  await ctx.plugin(LocalSpillStore, config)
}
