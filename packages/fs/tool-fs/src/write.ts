import { mkdir, stat, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { defineTool, ToolError } from '@dsh/tools'
import { z } from 'zod'
import { displayPath, fsError, identity, readRecords, resolvePath, sha256, statOrUndefined } from './files.ts'

export function writeTool() {
  return defineTool({
    name: 'write',
    description:
      'Write a file with the given content, creating it (and any missing parent folders) or replacing it entirely. ' +
      'Relative paths are resolved against the workspace. To change part of an existing file, prefer edit.',
    parameters: z.object({
      path: z.string().min(1).describe('The file to write, absolute or relative to the workspace.'),
      content: z.string().describe('The complete new content of the file.'),
    }),
    async execute(args, run) {
      const target = resolvePath(run.cwd, args.path)
      const shown = displayPath(run.cwd, target)
      const before = await statOrUndefined(target, shown)
      if (before?.isDirectory()) throw new ToolError('FS_IS_DIRECTORY', `${shown} is a directory; give a file path.`)
      if (before && !before.isFile()) throw new ToolError('FS_NOT_REGULAR_FILE', `${shown} is not a regular file.`)
      const data = Buffer.from(args.content, 'utf8')
      try {
        await mkdir(dirname(target), { recursive: true })
        await writeFile(target, data, { signal: run.signal })
      } catch (error) {
        if (run.signal.aborted) throw error
        throw fsError(error, shown)
      }
      // The model knows what it just wrote, so it may edit the file without reading it again.
      const after = await stat(target)
      readRecords(run.sessionState).set(await identity(target), {
        path: target,
        mtimeMs: after.mtimeMs,
        size: after.size,
        sha256: sha256(data),
      })
      const verb = before ? 'Overwrote' : 'Created'
      return {
        content: `${verb} ${shown} (${data.length} bytes written).`,
        meta: { path: target, operation: before ? 'overwrite' : 'create', bytes: data.length },
      }
    },
  })
}
