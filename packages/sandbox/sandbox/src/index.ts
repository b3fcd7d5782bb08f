import type { Context } from '@dsh/cordis'
import { BwrapSandbox, type BwrapSandboxConfig } from './bwrap.ts'

export { BwrapSandbox, type BwrapSandboxConfig, Config } from './bwrap.ts'
export { bwrapArguments, type HiddenPaths } from './profile.ts'
export { buildSeccompFilter, DENIED_SYSCALLS, SECCOMP_ARCHITECTURES, seccompSupported } from './seccomp.ts'
export * from './seam.ts'

export const name = 'sandbox-bwrap'

/** Provides `ctx.sandbox` with bubblewrap. */
export function apply(ctx: Context, config: BwrapSandboxConfig) {
  ctx.plugin(BwrapSandbox, config)
}
export { PROTECTED_PROJECT_NAMES, protectedProjectPaths } from './protected.ts'
