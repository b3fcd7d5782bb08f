import { createHash } from 'node:crypto'
import { realpath, stat } from 'node:fs/promises'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import { ToolError } from '@dsh/tools'

/** What the session knows about a file it has seen: its content hash and when it was last modified. */
export interface ReadRecord {
  path: string
  mtimeMs: number
  size: number
  sha256: string
}

const READS = 'tool-fs:reads'

/** The session's read records, keyed by the file's real path. */
export function readRecords(sessionState: Map<string, unknown>): Map<string, ReadRecord> {
  let records = sessionState.get(READS)
  if (!(records instanceof Map)) {
    records = new Map<string, ReadRecord>()
    sessionState.set(READS, records)
  }
  return records as Map<string, ReadRecord>
}

export function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex')
}

/** A path as the model gave it, made absolute against the session workspace. */
export function resolvePath(cwd: string, path: string): string {
  return resolve(cwd, path)
}

/** The path to show the model: relative when inside the workspace, else absolute. */
export function displayPath(cwd: string, target: string): string {
  const rel = relative(cwd, target)
  return rel && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel) ? rel : target
}

/** The file's identity for read records: its real path (symlinks share the target's record). */
export async function identity(target: string): Promise<string> {
  try {
    return await realpath(target)
  } catch {
    return target
  }
}

/** Stats a path; undefined when nothing is there. Other failures become tool errors. */
export async function statOrUndefined(target: string, shown: string) {
  try {
    return await stat(target)
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined
    throw fsError(error, shown)
  }
}

export function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code
}

/** A file system failure as a tool error the model can act on. */
export function fsError(error: unknown, shown: string): ToolError {
  switch (errno(error)) {
    case 'ENOENT':
      return new ToolError('FS_NOT_FOUND', `${shown} does not exist.`)
    case 'EACCES':
    case 'EPERM':
      return new ToolError('FS_PERMISSION_DENIED', `permission denied for ${shown}.`)
    case 'ENOTDIR':
      return new ToolError('FS_NOT_DIRECTORY', `a parent of ${shown} is not a directory.`)
    case 'EISDIR':
      return new ToolError('FS_IS_DIRECTORY', `${shown} is a directory, not a file.`)
    default:
      return new ToolError('FS_IO_ERROR', `could not access ${shown}: ${error instanceof Error ? error.message : String(error)}`)
  }
}
