import type { Context } from '@dsh/cordis'
import { BwrapSandbox, type BwrapSandboxConfig } from './bwrap.ts'

export { BwrapSandbox, type BwrapSandboxConfig, bwrapArguments, Config } from './bwrap.ts'
export { SANDBOX_MODES, Sandbox, type SandboxAvailability, type SandboxMode, type SandboxPolicy, type WrapResult } from './seam.ts'

export const name = 'sandbox-bwrap'

/** Provides `ctx.sandbox` with bubblewrap. */
export function apply(ctx: Context, config: BwrapSandboxConfig) {
  ctx.plugin(BwrapSandbox, config)
}
