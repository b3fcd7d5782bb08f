import type { Context } from '@dsh/cordis'
import { defineTool, ToolError, toolParameters } from '@dsh/tools'
import { z } from 'zod'
import type { FsToolsConfig } from './config.ts'
import { editDiff, type Replacement } from './diff.ts'
import {
  displayPath,
  fileAccess,
  fsOptions,
  MAX_PATH_LENGTH,
  readRecords,
  sha256,
  shownArgument,
  statOrUndefined,
  toolErrorOf,
  writeKnown,
} from './files.ts'
import { fileChange } from './presentation.ts'

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

const editParameters = toolParameters(
  z.object({
    file_path: z
      .string()
      .min(1)
      .max(MAX_PATH_LENGTH)
      .describe('The file to edit, absolute or relative to the workspace.'),
    old_string: z.string().min(1).describe('The exact text to replace.'),
    new_string: z.string().describe('The text to put in its place.'),
    replace_all: z
      .boolean()
      .optional()
      .describe('Replace every occurrence instead of requiring exactly one. Default false.'),
  }),
)

export function editTool(ctx: Context, config: FsToolsConfig) {
  return defineTool({
    name: 'edit',
    presentation: fileChange('Edit', ({ old_string: oldText, new_string: newText }) =>
      typeof oldText === 'string' && typeof newText === 'string' ? { oldText, newText } : undefined,
    ),
    description:
      'Replace exact text in a file. `old_string` must match the file exactly (whitespace and indentation included) and, ' +
      'unless `replace_all` is true, exactly once; include enough surrounding lines to make it unique. ' +
      'Read the file in this session first; an edit of a file that was not read, or that changed on disk since, is refused. ' +
      'Returns a diff of the change.',
    parameters: editParameters,
    access: fileAccess('write', 'edit'),
    async execute(args, run) {
      let shown = shownArgument(run.cwd, args.file_path)
      if (args.old_string === args.new_string) {
        throw new ToolError(
          'FS_EDIT_NO_CHANGE',
          'old_string and new_string are identical, so there is nothing to change.',
        )
      }
      const info = await statOrUndefined(ctx, args.file_path, run, shown)
      if (!info) throw new ToolError('FS_NOT_FOUND', `file not found: ${shown}. To create a file, use write.`)
      shown = displayPath(run.cwd, info.path.absolute)
      if (info.type !== 'file') throw new ToolError('FS_NOT_REGULAR_FILE', `${shown} is not a regular file.`)

      // Every later access must land where the check (or, without one, this stat) saw the file.
      const options = { ...fsOptions(run, args.file_path), expectReal: info.path.real }
      const records = readRecords(run.sessionState)
      const record = records.get(info.path.real)
      if (!record)
        throw new ToolError(
          'FS_NOT_READ',
          `you have not read ${shown} in this session. Read it with the read tool first, then retry the edit.`,
        )

      let bytes: Buffer
      try {
        bytes = await ctx.fs.readFile(args.file_path, { ...options, maxBytes: config.maxEditBytes })
      } catch (error) {
        throw toolErrorOf(error, shown, run.signal, {
          TOO_LARGE: `${shown} is larger than the ${config.maxEditBytes} bytes edit works on. Use write to replace it, or bash for a stream edit.`,
        })
      }
      if (sha256(bytes) !== record.sha256) {
        throw new ToolError(
          'FS_STALE',
          `${shown} has changed on disk since you last read it (modified ${new Date(info.mtimeMs).toISOString()}). Read it again, then retry the edit.`,
        )
      }
      if (bytes.includes(0))
        throw new ToolError(
          'FS_NOT_TEXT',
          `${shown} looks like a binary file (it contains NUL bytes); edit only changes text files.`,
        )
      let before: string
      try {
        before = utf8.decode(bytes)
      } catch {
        throw new ToolError('FS_NOT_TEXT', `${shown} is not valid UTF-8 text, so edit cannot change it safely.`)
      }

      const match = findMatches(before, args.old_string, args.new_string)
      if (!match) {
        throw new ToolError(
          'FS_EDIT_NOT_FOUND',
          `old_string was not found in ${shown}. It must match the file exactly, including whitespace, indentation and line breaks. Read the file again and copy the text exactly.`,
        )
      }
      const { positions, oldText, newText } = match
      if (positions.length > 1 && args.replace_all !== true) {
        throw new ToolError(
          'FS_AMBIGUOUS_EDIT',
          `old_string occurs ${positions.length} times in ${shown}. Include more surrounding lines so it matches exactly one place, or set replace_all to true to change every occurrence.`,
        )
      }

      let after = ''
      let cursor = 0
      for (const position of positions) {
        after += before.slice(cursor, position) + newText
        cursor = position + oldText.length
      }
      after += before.slice(cursor)

      const data = Buffer.from(after, 'utf8')
      const written = await writeKnown(ctx, args.file_path, data, options, run, shown)

      const replacements: Replacement[] = positions.map((start) => ({
        start,
        oldLength: oldText.length,
        newLength: newText.length,
      }))
      const diff = editDiff(shown, before, after, replacements, {
        context: config.diffContextLines,
        maxLines: config.maxDiffLines,
      })
      const count = positions.length === 1 ? 'one occurrence' : `all ${positions.length} occurrences`
      return {
        content: `Edited ${shown}: replaced ${count}.\n\n${diff}`,
        meta: { path: written.path.absolute, replacements: positions.length },
      }
    },
  })
}

interface Match {
  positions: number[]
  oldText: string
  newText: string
}

/**
 * Where `oldText` occurs, without overlaps. When the file uses CRLF line
 * endings and the model wrote LF, the CRLF forms are tried as well, so the
 * file keeps its line endings.
 */
function findMatches(text: string, oldText: string, newText: string): Match | undefined {
  const positions = occurrences(text, oldText)
  if (positions.length) return { positions, oldText, newText }
  if (text.includes('\r\n') && oldText.includes('\n') && !oldText.includes('\r')) {
    const crlfOld = oldText.replace(/\n/g, '\r\n')
    const crlfPositions = occurrences(text, crlfOld)
    if (crlfPositions.length)
      return { positions: crlfPositions, oldText: crlfOld, newText: newText.replace(/\r?\n/g, '\r\n') }
  }
  return undefined
}

function occurrences(text: string, needle: string): number[] {
  const found: number[] = []
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) found.push(i)
  return found
}
