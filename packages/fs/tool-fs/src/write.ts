import type { Context } from '@dsh/cordis'
import type { FsCallOptions } from '@dsh/fs'
import { defineTool, type ToolRunContext, ToolError, toolParameters } from '@dsh/tools'
import { z } from 'zod'
import type { FsToolsConfig } from './config.ts'
import { replacementDiff } from './diff.ts'
import {
  displayPath,
  fileAccess,
  fsOptions,
  MAX_PATH_LENGTH,
  shownArgument,
  statOrUndefined,
  writeKnown,
} from './files.ts'
import { fileChange } from './presentation.ts'

const writeParameters = toolParameters(
  z.object({
    file_path: z
      .string()
      .min(1)
      .max(MAX_PATH_LENGTH)
      .describe('The file to write, absolute or relative to the workspace.'),
    content: z.string().describe('The complete new content of the file.'),
  }),
)

export function writeTool(ctx: Context, config: FsToolsConfig) {
  return defineTool({
    name: 'write',
    presentation: fileChange('Write', ({ content }) =>
      typeof content === 'string' ? { oldText: null, newText: content } : undefined,
    ),
    description:
      'Write a file with the given content, creating it (and any missing parent folders) or replacing it entirely. ' +
      'The new content replaces the old in one step, so no half-written file is ever left behind. ' +
      'Relative paths are resolved against the workspace. To change part of an existing file, prefer edit.',
    parameters: writeParameters,
    access: fileAccess('write', 'write'),
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

      const options = fsOptions(run, args.file_path)
      const writeOptions = before ? { ...options, expectReal: options.expectReal ?? before.path.real } : options
      const previous = before ? await previousText(ctx, args.file_path, writeOptions, run, config) : undefined
      const written = await writeKnown(ctx, args.file_path, data, writeOptions, run, shown, {
        NOT_DIRECTORY: `cannot create ${shown}: a part of its folder path is a file, not a folder.`,
      })
      shown = displayPath(run.cwd, written.path.absolute)
      const verb = written.created ? 'Created' : 'Overwrote'
      const summary = `${verb} ${shown} (${written.bytes} bytes written).`
      const meta = {
        path: written.path.absolute,
        operation: written.created ? 'create' : 'overwrite',
        bytes: written.bytes,
      }
      if (written.created || !previous) return { content: summary, meta }
      if ('unavailable' in previous) return { content: `${summary} No diff: ${previous.unavailable}.`, meta }
      const diff = replacementDiff(shown, previous.text, args.content, {
        context: config.diffContextLines,
        maxLines: config.maxDiffLines,
      })
      // `oldText`: the content replaced, for surfaces that show the change as made (ACP's diff).
      return { content: `${summary}\n\n${diff}`, meta: { ...meta, oldText: previous.text } }
    },
  })
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * The text a write is about to replace, read through the same policy as
 * `read` (a file the session may not read gives no diff), or why there is
 * none: too large, binary, not UTF-8 or unreadable.
 */
async function previousText(
  ctx: Context,
  given: string,
  options: FsCallOptions,
  run: ToolRunContext,
  config: FsToolsConfig,
): Promise<{ text: string } | { unavailable: string }> {
  let bytes: Buffer
  try {
    bytes = await ctx.fs.readFile(given, { ...options, maxBytes: config.maxWriteDiffBytes })
  } catch (error) {
    if (run.signal.aborted) throw error
    const code = (error as { code?: unknown }).code
    return {
      unavailable:
        code === 'TOO_LARGE'
          ? `the previous content is larger than ${config.maxWriteDiffBytes} bytes`
          : 'the previous content could not be read',
    }
  }
  if (bytes.includes(0)) return { unavailable: 'the previous content was binary' }
  try {
    return { text: utf8.decode(bytes) }
  } catch {
    return { unavailable: 'the previous content was not UTF-8 text' }
  }
}
