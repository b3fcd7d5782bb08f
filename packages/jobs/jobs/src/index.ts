import type { Context } from '@dsh/cordis'
import { type LocalJobsConfig, LocalJobs } from './local.ts'

export { Config, LocalJobs, type LocalJobsConfig } from './local.ts'
export { incompleteTail, leadingContinuation, OutputRing } from './ring.ts'
export * from './seam.ts'

export const name = 'jobs-local'

/** Provides `ctx.jobs`: background processes owned by sessions. */
export function apply(ctx: Context, config: LocalJobsConfig) {
  ctx.plugin(LocalJobs, config)
}
