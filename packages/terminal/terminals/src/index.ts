import type { Context } from '@dsh/cordis'
import { LocalTerminals, type LocalTerminalsConfig } from './local.ts'

export * from './seam.ts'
export { AnsiStripper, stripAnsi } from './ansi.ts'
export { type BufferSlice, OutputBuffer } from './buffer.ts'
export { Config, LocalTerminals, type LocalTerminalsConfig } from './local.ts'
export { withoutSize } from './process.ts'

export const name = 'terminals'
export const inject = ['subprocess']

/** Provides `ctx.terminals` with local pseudo-terminals (node-pty); their environment comes from `ctx.subprocess`. */
export function apply(ctx: Context, config: LocalTerminalsConfig) {
  ctx.plugin(LocalTerminals, config)
}
