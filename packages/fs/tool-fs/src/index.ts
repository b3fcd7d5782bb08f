import type { Context } from '@dsh/cordis'
import type { ToolDefinition } from '@dsh/tools'
import { Config, type FsToolsConfig } from './config.ts'
import { editTool } from './edit.ts'
import { readTool } from './read.ts'
import { writeTool } from './write.ts'

export { Config, type FsToolsConfig }
export { editDiff, type Replacement } from './diff.ts'
export { readRecords, type ReadRecord } from './files.ts'

export const name = 'tool-fs'
export const inject = ['tools']

/** The three tools, built for one configuration. */
export function createFsTools(config: FsToolsConfig): ToolDefinition[] {
  return [readTool(config), writeTool(), editTool(config)]
}

/** Registers `read`, `write` and `edit` on `ctx.tools`. */
export function apply(ctx: Context, config: FsToolsConfig) {
  for (const tool of createFsTools(config)) ctx.tools.register(ctx, tool)
}
