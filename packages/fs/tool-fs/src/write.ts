import type { Context } from '@dsh/cordis'
import type { WriteResult } from '@dsh/fs'
import { callTarget, defineTool, ToolError } from '@dsh/tools'
import { z } from 'zod'
import type { FsToolsConfig } from './config.ts'
import {
  displayPath,
  fsOptions,
  MAX_PATH_LENGTH,
  readRecords,
  sha256,
  shownArgument,
  statOrUndefined,
  toolErrorOf,
} from './files.ts'

export function writeTool(ctx: Context, config: FsToolsConfig) {
  return defineTool({
    name: 'write',
    presentation: {
      kind: 'edit',
      view: 'diff',
      title: (args, shown) => {
        const target = callTarget(args)
        return target ? `Write ${shown(target)}` : 'Write'
      },
      change: (args) => {
        const target = callTarget(args)
        return target && typeof args.content === 'string'
          ? { path: target, oldText: null, newText: args.content }
          : undefined
      },
    },
    description:
      'Write a file with the given content, creating it (and any missing parent folders) or replacing it entirely. ' +
      'The new content replaces the old in one step, so no half-written file is ever left behind. ' +
      'Relative paths are resolved against the workspace. To change part of an existing file, prefer edit.',
    parameters: z.object({
      file_path: z
        .string()
        .min(1)
        .max(MAX_PATH_LENGTH)
        .describe('The file to write, absolute or relative to the workspace.'),
      content: z.string().describe('The complete new content of the file.'),
    }),
    access: (args) => ({ kind: 'write', paths: [args.file_path], summary: `write ${args.file_path}` }),
    async execute(args, run) {
      let shown = shownArgument(run.cwd, args.file_path)
      const data = Buffer.from(args.content, 'utf8')
      if (data.length > config.maxWriteBytes) {
        throw new ToolError(
          'FS_TOO_LARGE',
          `the content is ${data.length} bytes; write accepts at most ${config.maxWriteBytes} bytes per file.`,
        )
      }
      const before = await statOrUndefined(ctx, args.file_path, run, shown)
      if (before) shown = displayPath(run.cwd, before.path.absolute)
      if (before?.type === 'directory')
        throw new ToolError('FS_IS_DIRECTORY', `${shown} is a directory; give a file path.`)
      if (before && before.type !== 'file')
        throw new ToolError('FS_NOT_REGULAR_FILE', `${shown} is not a regular file.`)

      let written: WriteResult
      try {
        const options = fsOptions(run, args.file_path)
        written = await ctx.fs.writeFile(
          args.file_path,
          data,
          before ? { ...options, expectReal: options.expectReal ?? before.path.real } : options,
        )
      } catch (error) {
        throw toolErrorOf(error, shown, run.signal, {
          NOT_DIRECTORY: `cannot create ${shown}: a part of its folder path is a file, not a folder.`,
        })
      }
      shown = displayPath(run.cwd, written.path.absolute)
      // The model knows what it just wrote, so it may edit the file without reading it again.
      readRecords(run.sessionState).set(written.path.real, {
        path: written.path.absolute,
        mtimeMs: written.mtimeMs,
        size: written.bytes,
        sha256: sha256(data),
      })
      const verb = written.created ? 'Created' : 'Overwrote'
      return {
        content: `${verb} ${shown} (${written.bytes} bytes written).`,
        meta: {
          path: written.path.absolute,
          operation: written.created ? 'create' : 'overwrite',
          bytes: written.bytes,
        },
      }
    },
  })
}
