import type { Context } from '@dsh/cordis'
import type { ToolDefinition } from '@dsh/tools'
import { Config, type FsToolsConfig } from './config.ts'
import { editTool } from './edit.ts'
import { globTool } from './glob.ts'
import { grepTool } from './grep.ts'
import { lsTool } from './ls.ts'
import { readTool } from './read.ts'
import { writeTool } from './write.ts'

export { Config, type FsToolsConfig }
export { editDiff, type Replacement } from './diff.ts'
export { readRecords, type ReadRecord } from './files.ts'
export { imageType, type ImageMediaType } from './image.ts'
export { scrubbedEnv } from './ripgrep.ts'

export const name = 'tool-fs'
export const inject = ['tools', 'fs']

/**
 * The file tools for one configuration. They reach the file system through
 * `ctx.fs` (and `ctx.spill` when mounted) of the context given, looked up on
 * every call.
 */
export function createFsTools(ctx: Context, config: FsToolsConfig): ToolDefinition[] {
  return [readTool(ctx, config), writeTool(ctx, config), editTool(ctx, config), globTool(ctx, config), grepTool(ctx, config), lsTool(ctx, config)]
}

/** Registers `read`, `write`, `edit`, `glob`, `grep` and `ls` on `ctx.tools`. */
export function apply(ctx: Context, config: FsToolsConfig) {
  for (const tool of createFsTools(ctx, config)) ctx.tools.register(ctx, tool)
}
