import type { Context } from '@dsh/cordis'
import { type PermissionConfig, PermissionService } from './service.ts'

export * from './types.ts'
export {
  Config,
  DECISION_EVENT,
  NETWORK_DECISION_EVENT,
  NETWORK_EVENT,
  type NetworkAskContext,
  PRESET_EVENT,
  type PermissionConfig,
  type PermissionRun,
  PermissionService,
  type SandboxPolicyOptions,
} from './service.ts'
export { readRuleSection } from './rules.ts'
export { classify, accessOf, writeScope, type ClassifyOptions, type Verdict, type WriteScope } from './classify.ts'
export { isWithin, resolveReal } from './paths.ts'
export { NETWORK_MODES, type NetworkMode, protectedProjectPaths } from '@dsh/sandbox'

export const name = 'permission'
export const inject = ['tools', 'sessions']

/** Provides `ctx.permission`. */
export function apply(ctx: Context, config: PermissionConfig) {
  ctx.plugin(PermissionService, config)
}
