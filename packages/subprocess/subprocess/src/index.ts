import type { Context } from '@dsh/cordis'
import { type LocalSubprocessConfig, LocalSubprocess } from './local.ts'

export {
  CORE_PATTERNS,
  DEFAULT_ENVIRONMENT_POLICY,
  DEFAULT_SECRET_PATTERNS,
  type EnvironmentInherit,
  EnvironmentPolicy,
  type EnvironmentPolicyConfig,
  HARNESS_PATTERNS,
  scrubEnvironment,
  URL_PASSWORD,
} from './env.ts'
export { Config, LocalSubprocess, type LocalSubprocessConfig } from './local.ts'
export {
  delay,
  groupAlive,
  isLive,
  isRunning,
  killTree,
  type KillTreeOptions,
  type ProcessEntry,
  ProcessTree,
  readProcessEntry,
  readProcessTable,
} from './procfs.ts'
export { type ProcessExit, type ProcessHandle, type ProcessSpec, Subprocess } from './seam.ts'

export const name = 'subprocess-local'

/** Provides `ctx.subprocess` with local processes. */
export function apply(ctx: Context, config: LocalSubprocessConfig) {
  ctx.plugin(LocalSubprocess, config)
}
