import { createHash } from 'node:crypto'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import { assertNever, type Context, sharedMap } from '@dsh/cordis'
import { checkedReal, type FileStat, type FsCallOptions, FileSystemError, type WriteResult } from '@dsh/fs'
import type { SpillStore } from '@dsh/spill'
import { type ToolAccess, ToolError, type ToolRunContext } from '@dsh/tools'

/** What the session knows about a file it has seen: its content hash and when it was last modified. */
export interface ReadRecord {
  path: string
  mtimeMs: number
  size: number
  sha256: string
}

const READS = 'tool-fs:reads'

/** Paths longer than this are refused before anything looks at them (Linux PATH_MAX). */
export const MAX_PATH_LENGTH = 4096

/** The session's read records, keyed by the file's real path. */
export function readRecords(sessionState: Map<string, unknown>): Map<string, ReadRecord> {
  return sharedMap(sessionState, READS)
}

export function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex')
}

/**
 * The options every `ctx.fs` call of a tool passes: the session workspace, the
 * session, the call's signal. With `given` (the path argument of the call),
 * also the real location a permission policy checked for it before the call
 * ran, so `ctx.fs` acts there or fails with `PATH_CHANGED`.
 */
export function fsOptions(run: ToolRunContext, given?: string): FsCallOptions {
  const options: FsCallOptions = { cwd: run.cwd, sessionId: run.sessionId, signal: run.signal }
  if (given === undefined) return options
  const checked = checkedReal(run.sessionState, run.callId, resolve(run.cwd, given))
  return checked === undefined ? options : { ...options, expectReal: checked }
}

/** The path to show the model: relative when inside the workspace, else absolute. Control characters are escaped. */
export function displayPath(cwd: string, target: string): string {
  const rel = relative(cwd, target)
  const shown = rel === '' ? '.' : !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel) ? rel : target
  return printable(shown)
}

/** The access of a tool that reads or writes the file its `file_path` names; approvals show `<verb> <path>`. */
export function fileAccess(kind: 'read' | 'write', verb: string): (args: { file_path: string }) => ToolAccess {
  return (args) => ({ kind, paths: [args.file_path], summary: `${verb} ${args.file_path}` })
}

/** How to show a path argument before it is resolved. */
export function shownArgument(cwd: string, given: string): string {
  return displayPath(cwd, resolve(cwd, given))
}

/** Escapes NUL and other control characters so a path reads as one line. */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
}

/** `ctx.spill` when a spill provider is mounted. */
export function spillOf(ctx: Context): SpillStore | undefined {
  return ctx.get('spill') as SpillStore | undefined
}

/** Per-code wording for the errors a tool wants to phrase itself. */
export type ErrorWording = Partial<Record<FileSystemError['code'], string>>

/**
 * A failure of `ctx.fs` as a tool error the model can act on. An abort is
 * passed through untouched, so the runtime reports it as a cancel or timeout.
 */
export function toolErrorOf(error: unknown, shown: string, signal: AbortSignal, wording: ErrorWording = {}): unknown {
  if (signal.aborted) return error
  if (!(error instanceof FileSystemError)) {
    return new ToolError(
      'FS_IO_ERROR',
      `could not access ${shown}: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  const own = wording[error.code]
  switch (error.code) {
    case 'INVALID_PATH':
      return new ToolError('FS_INVALID_PATH', own ?? `invalid path ${shown}: ${error.message}.`)
    case 'DENIED':
      return new ToolError(
        'FS_DENIED',
        own ?? `access to ${shown} was denied: ${error.reason ?? error.message}. Do not retry this path.`,
      )
    case 'NOT_FOUND':
      return new ToolError('FS_NOT_FOUND', own ?? `${shown} does not exist.`)
    case 'IS_DIRECTORY':
      return new ToolError('FS_IS_DIRECTORY', own ?? `${shown} is a directory, not a file.`)
    case 'NOT_DIRECTORY':
      return new ToolError('FS_NOT_DIRECTORY', own ?? `${shown}: a part of the path is not a directory.`)
    case 'NOT_A_FILE':
      return new ToolError('FS_NOT_REGULAR_FILE', own ?? `${shown} is not a regular file.`)
    case 'PERMISSION':
      return new ToolError('FS_PERMISSION_DENIED', own ?? `permission denied for ${shown}.`)
    case 'TOO_LARGE':
      return new ToolError('FS_TOO_LARGE', own ?? `${shown} is too large: ${error.message}.`)
    case 'LOOP':
      return new ToolError('FS_SYMLINK_LOOP', own ?? `${shown} goes through a symlink loop.`)
    case 'PATH_CHANGED':
      return new ToolError('FS_PATH_CHANGED', own ?? error.message)
    case 'IO':
      return new ToolError('FS_IO_ERROR', own ?? `could not access ${shown}: ${error.message}`)
    default:
      return assertNever(error.code, 'file system error code')
  }
}

/** Stats a path; undefined when nothing is there. Other failures become tool errors. */
/**
 * Writes `data` through `ctx.fs` and records its hash as seen by the session:
 * the model knows what it just wrote, so it may edit the file without reading it again.
 */
export async function writeKnown(
  ctx: Context,
  given: string,
  data: Buffer,
  options: FsCallOptions,
  run: ToolRunContext,
  shown: string,
  wording: ErrorWording = {},
): Promise<WriteResult> {
  let written: WriteResult
  try {
    written = await ctx.fs.writeFile(given, data, options)
  } catch (error) {
    throw toolErrorOf(error, shown, run.signal, wording)
  }
  readRecords(run.sessionState).set(written.path.real, {
    path: written.path.absolute,
    mtimeMs: written.mtimeMs,
    size: written.bytes,
    sha256: sha256(data),
  })
  return written
}

export async function statOrUndefined(
  ctx: Context,
  given: string,
  run: ToolRunContext,
  shown: string,
): Promise<FileStat | undefined> {
  try {
    return await ctx.fs.stat(given, fsOptions(run, given))
  } catch (error) {
    if (error instanceof FileSystemError && error.code === 'NOT_FOUND') return undefined
    throw toolErrorOf(error, shown, run.signal)
  }
}
