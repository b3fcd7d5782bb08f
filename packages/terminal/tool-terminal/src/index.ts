import type { Context } from '@dsh/cordis'
import type { TerminalToolsConfig } from './config.ts'
import { terminalTools } from './tools.ts'

export { Config, type TerminalToolsConfig } from './config.ts'
export { terminalTools } from './tools.ts'

export const name = 'tool-terminal'
export const inject = ['tools', 'terminals']

/** Registers `terminal_create`, `terminal_send`, `terminal_read`, `terminal_kill` and `terminal_list` on `ctx.tools`. */
export function apply(ctx: Context, config: TerminalToolsConfig) {
  for (const tool of terminalTools(ctx, config)) ctx.tools.register(ctx, tool)
}
