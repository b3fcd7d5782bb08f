import type { Context } from '@dsh/cordis'
import { Hooks, type HooksConfig } from './service.ts'

export { HOOK_EVENTS, type HookCommand, type HookEventName, matches, readHooksFile } from './files.ts'
export {
  Config,
  type HookFileInfo,
  type HookFlavor,
  type HookInvokedEvent,
  type HookResultEvent,
  Hooks,
  type HooksConfig,
  interpret,
  type PayloadContext,
} from './service.ts'

export const name = 'hooks'
export const inject = ['tools', 'sessions', 'subprocess']

/** Provides `ctx.hooks`, which the Claude Code and Codex hooks plugins register their files with. */
export function apply(ctx: Context, config: HooksConfig) {
  ctx.plugin(Hooks, config)
}
