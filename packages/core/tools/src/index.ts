import type { Context } from '@dsh/cordis'
import { type ToolsConfig, ToolRuntime } from './runtime.ts'

export * from './types.ts'
export { untilAborted } from './abort.ts'
export { defineTool, errorMessage, parametersJsonSchema, toolParameters, toolParametersBy } from './define.ts'
export {
  callTarget,
  diagnosticCounts,
  formatDiagnostic,
  GENERIC_PRESENTATION,
  oneLine,
  parseCallArguments,
  presentCall,
  shownPath,
  textArgument,
  withPresentation,
} from './describe.ts'
export { capResult, failure, formatIssues, textOf } from './result.ts'
export { codeFence, presentResult, type ToolResultView } from './result-view.ts'
export { resultDiagnostics } from '@dsh/wire-types'
export { Config, ToolRuntime, type ToolsConfig } from './runtime.ts'

export const name = 'tools'

/** Provides `ctx.tools`. */
export function apply(ctx: Context, config: ToolsConfig) {
  ctx.plugin(ToolRuntime, config)
}
