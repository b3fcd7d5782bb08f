import type { Context } from '@dsh/cordis'
import type { ToolDefinition } from '@dsh/tools'
import { Config, FS_TOOL_NAMES, type FsToolName, type FsToolsConfig } from './config.ts'
import { editTool } from './edit.ts'
import { globTool } from './glob.ts'
import { grepTool } from './grep.ts'
import { lsTool } from './ls.ts'
import { readTool } from './read.ts'
import { offerToImageModels, readImageTool } from './read-image.ts'
import { writeTool } from './write.ts'

export { Config, FS_TOOL_NAMES, type FsToolName, type FsToolsConfig }
export { editDiff, type Replacement } from './diff.ts'
export { readRecords, type ReadRecord, toolErrorOf } from './files.ts'
export { imageType, type ImageMediaType } from './image.ts'
export { type CutMeta, cutFooter, nullSeparated, runRipgrep, scrubbedEnv, type RgOutcome } from './ripgrep.ts'

export const name = 'tool-fs'
export const inject = ['tools', 'fs']

/**
 * The file tools for one configuration. They reach the file system through
 * `ctx.fs` (and `ctx.spill` when mounted) of the context given, looked up on
 * every call.
 */
export function createFsTools(ctx: Context, config: FsToolsConfig): ToolDefinition[] {
  return [
    readTool(ctx, config),
    readImageTool(ctx, config),
    writeTool(ctx, config),
    editTool(ctx, config),
    globTool(ctx, config),
    grepTool(ctx, config),
    lsTool(ctx, config),
  ]
}

/** Registers the file tools named in `config.tools` (default all seven) on `ctx.tools`. */
export function apply(ctx: Context, config: FsToolsConfig) {
  const wanted = new Set<string>(config.tools ?? FS_TOOL_NAMES)
  for (const tool of createFsTools(ctx, config)) if (wanted.has(tool.name)) ctx.tools.register(ctx, tool)
  if (wanted.has('read_image')) offerToImageModels(ctx)
}
