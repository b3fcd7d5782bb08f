import type { Context } from '@dsh/cordis'
import { BashShell, type BashShellConfig } from './bash.ts'

export { BashShell, type BashShellConfig, Config } from './bash.ts'
export { Shell, ShellError, type ShellErrorCode, type ShellRunRequest } from './seam.ts'
// Consumers of `ctx.shell` need these without depending on the lower seams themselves.
export type { SandboxMode, SandboxPolicy } from '@dsh/sandbox'
export { protectedProjectPaths } from '@dsh/sandbox'
export type { ProcessExit, ProcessHandle } from '@dsh/subprocess'

export const name = 'shell-bash'
export const inject = ['subprocess']

/** Provides `ctx.shell`: `bash -c` through `ctx.sandbox` (when confined) and `ctx.subprocess`. */
export function apply(ctx: Context, config: BashShellConfig) {
  ctx.plugin(BashShell, config)
}
