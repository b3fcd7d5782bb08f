import { randomBytes } from 'node:crypto'
import { constants, lstatSync, mkdirSync, openSync, readdirSync, renameSync, type Stats, unlinkSync } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import type { Context } from '@dsh/cordis'
import { type HeldResolution, resolveHeld, resolveLocal } from './resolve.ts'
import {
  type DenyListConfig,
  type DirEntry,
  type FileStat,
  FileSystem,
  FileSystemError,
  type FileType,
  type FsCallOptions,
  type FsOperation,
  type HeldPath,
  type ReadFileOptions,
  type ReadStreamOptions,
  type ResolvedPath,
  type ResolveOptions,
  type WriteFileOptions,
  type WriteResult,
} from './seam.ts'
import {
  closeQuietly,
  errno,
  pathTooLong,
  type HeldDir,
  O_PATH,
  pathChanged,
  procPath,
  release,
  verifyFdPath,
  type Walked,
} from './walk.ts'

/** Turns a Node error into a `FileSystemError` naming the path. */
export function fromNodeError(error: unknown, target: string): FileSystemError {
  if (error instanceof FileSystemError) return error
  const message = error instanceof Error ? error.message : String(error)
  const cause = { cause: error }
  switch (errno(error)) {
    case 'ENOENT':
      return new FileSystemError('NOT_FOUND', target, `no such file or folder: ${target}`, undefined, cause)
    case 'EISDIR':
      return new FileSystemError('IS_DIRECTORY', target, `${target} is a folder, not a file`, undefined, cause)
    case 'ENOTDIR':
      return new FileSystemError('NOT_DIRECTORY', target, `a part of ${target} is not a folder`, undefined, cause)
    case 'EEXIST':
      return new FileSystemError('NOT_DIRECTORY', target, `${target} exists and is not a folder`, undefined, cause)
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return new FileSystemError('PERMISSION', target, `permission denied: ${target}`, undefined, cause)
    case 'ELOOP':
      return new FileSystemError('LOOP', target, `too many levels of symbolic links in ${target}`, undefined, cause)
    case 'ENAMETOOLONG':
      return pathTooLong(target, cause)
    default:
      return new FileSystemError('IO', target, `could not access ${target}: ${message}`, undefined, cause)
  }
}

/** Throws `TOO_LARGE` when a file of `size` bytes exceeds the caller's `limit`. */
function checkSize(absolute: string, size: number, limit: number | undefined): void {
  if (limit !== undefined && size > limit) {
    throw new FileSystemError('TOO_LARGE', absolute, `${absolute} is ${size} bytes, more than the ${limit} allowed`)
  }
}

function typeOf(info: Stats): Exclude<FileType, 'symlink'> {
  if (info.isFile()) return 'file'
  if (info.isDirectory()) return 'directory'
  return 'other'
}

function aborted(options: FsCallOptions): void {
  options.signal?.throwIfAborted()
}

/** The Node error of an operation, unless the caller aborted it: then the abort reason. */
function failure(error: unknown, target: string, options: FsCallOptions): unknown {
  if (options.signal?.aborted) return options.signal.reason
  return fromNodeError(error, target)
}

/**
 * `ctx.fs` on the local disk. Every access walks the path through
 * descriptors (see walk.ts), asks the policy about the real location the walk
 * found, and then works through the descriptors it holds, so a component
 * swapped for a symlink between the check and the use cannot redirect it.
 */
export class LocalFileSystem extends FileSystem {
  constructor(ctx: Context, config: DenyListConfig = {}) {
    super(ctx, config)
  }

  resolve(given: string, options: ResolveOptions): Promise<ResolvedPath> {
    return resolveLocal(given, options)
  }

  async stat(given: string, options: FsCallOptions): Promise<FileStat> {
    const { path: target, walked } = await this.prepare('read', 'stat', given, options)
    try {
      return statOf(target, found(walked, target).stats)
    } finally {
      release(walked)
    }
  }

  async readFile(given: string, options: ReadFileOptions): Promise<Buffer> {
    const held = await this.prepare('read', 'readFile', given, options)
    const target = held.path
    let handle: FileHandle
    try {
      const supplied = await this.suppliedContent('readFile', target, options)
      if (supplied) {
        checkSize(target.absolute, supplied.length, options.maxBytes)
        return supplied
      }
      handle = await openFile(held, options)
    } finally {
      release(held.walked)
    }
    try {
      const info = await handle.stat()
      const limit = options.maxBytes
      checkSize(target.absolute, info.size, limit)
      const data = await readAll(handle, limit, options.signal)
      if (limit !== undefined && data.length > limit) {
        throw new FileSystemError(
          'TOO_LARGE',
          target.absolute,
          `${target.absolute} grew past the ${limit} bytes allowed while it was read`,
        )
      }
      return data
    } catch (error) {
      throw failure(error, target.absolute, options)
    } finally {
      await handle.close().catch(() => {})
    }
  }

  async readStream(given: string, options: ReadStreamOptions): Promise<Readable> {
    const held = await this.prepare('read', 'readStream', given, options)
    let handle: FileHandle
    try {
      const supplied = await this.suppliedContent('readStream', held.path, options)
      if (supplied) {
        const range = supplied.subarray(options.start ?? 0, options.end === undefined ? undefined : options.end + 1)
        return Readable.from(range.length > 0 ? [range] : [])
      }
      handle = await openFile(held, options)
    } finally {
      release(held.walked)
    }
    const stream = handle.createReadStream({ start: options.start, end: options.end, autoClose: true })
    const signal = options.signal
    if (signal) {
      const stop = () =>
        stream.destroy(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)))
      signal.addEventListener('abort', stop, { once: true })
      stream.once('close', () => signal.removeEventListener('abort', stop))
    }
    return stream
  }

  async writeFile(given: string, data: string | Uint8Array, options: WriteFileOptions): Promise<WriteResult> {
    const held = await this.prepare('write', 'writeFile', given, options)
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
    try {
      return await this.storeContent(held.path, bytes, options, () => writeLocal(held, bytes, options))
    } finally {
      release(held.walked)
    }
  }

  async readdir(given: string, options: FsCallOptions): Promise<DirEntry[]> {
    const held = await this.prepare('read', 'readdir', given, options)
    const target = held.path
    try {
      const { fd, stats } = found(held.walked, target)
      if (!stats.isDirectory())
        throw new FileSystemError('NOT_DIRECTORY', target.absolute, `${target.absolute} is not a folder`)
      verifyFdPath(fd, target.real, target.absolute)
      const entries = readdirSync(procPath(fd), { withFileTypes: true })
      return entries
        .filter((entry) => this.deniedReason(path.join(target.real, entry.name)) === undefined)
        .map(
          (entry): DirEntry => ({
            name: entry.name,
            type: entry.isSymbolicLink()
              ? 'symlink'
              : entry.isDirectory()
                ? 'directory'
                : entry.isFile()
                  ? 'file'
                  : 'other',
          }),
        )
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    } catch (error) {
      throw failure(error, target.absolute, options)
    } finally {
      release(held.walked)
    }
  }

  async mkdir(given: string, options: FsCallOptions): Promise<ResolvedPath> {
    const held = await this.prepare('write', 'mkdir', given, options)
    const target = held.path
    const walked = held.walked
    try {
      if (walked.kind === 'found') {
        if (!walked.stats.isDirectory())
          throw new FileSystemError('NOT_DIRECTORY', target.absolute, `${target.absolute} exists and is not a folder`)
        return target
      }
      const opened: number[] = []
      try {
        let dir = walked.dir
        for (const part of missingParts(walked, target)) {
          dir = makeDir(dir, part, target.absolute)
          opened.push(dir.fd)
        }
      } finally {
        for (const fd of opened) closeQuietly(fd)
      }
      return target
    } catch (error) {
      throw failure(error, target.absolute, options)
    } finally {
      release(walked)
    }
  }

  async hold(given: string, options: FsCallOptions): Promise<HeldPath> {
    const held = await this.prepare('read', 'hold', given, options)
    const target = held.path
    let kept: { fd: number; stats: Stats }
    try {
      kept = found(held.walked, target)
    } catch (error) {
      release(held.walked)
      throw error
    }
    // Keep the target's descriptor; let go of its folder.
    if (held.walked.dir.fd !== kept.fd) closeQuietly(held.walked.dir.fd)
    let open = true
    return {
      path: target,
      type: typeOf(kept.stats),
      // Through the process id, not `self`: a child process reads it from its own /proc entry otherwise.
      local: `/proc/${process.pid}/fd/${kept.fd}`,
      verify: () => verifyFdPath(kept.fd, target.real, target.absolute),
      close: () => {
        if (open) closeQuietly(kept.fd)
        open = false
      },
    }
  }

  /** Resolve through descriptors, check the abort signal, ask the policy. The caller must `release(walked)`. */
  private async prepare(
    kind: 'read' | 'write',
    operation: FsOperation,
    given: string,
    options: FsCallOptions,
  ): Promise<HeldResolution> {
    aborted(options)
    const held = resolveHeld(given, options)
    try {
      await this.authorize(kind, operation, held.path, options)
      aborted(options)
    } catch (error) {
      release(held.walked)
      throw error
    }
    return held
  }
}

/** The walk's target when the whole path exists; else the error a read gives. */
function found(walked: Walked, target: ResolvedPath): { fd: number; stats: Stats } {
  if (walked.kind === 'found') return walked
  if (walked.blocked === 'not-a-directory') {
    throw new FileSystemError('NOT_DIRECTORY', target.absolute, `a part of ${target.absolute} is not a folder`)
  }
  throw new FileSystemError('NOT_FOUND', target.absolute, `no such file or folder: ${target.absolute}`)
}

/** The components to create below the deepest existing folder (a `..` in a dangling link is normalized first). */
function missingParts(walked: Walked & { kind: 'missing' }, target: ResolvedPath): string[] {
  if (walked.blocked === 'not-a-directory') {
    throw new FileSystemError(
      'NOT_DIRECTORY',
      target.absolute,
      `cannot create ${target.absolute}: a part of its folder path is a file, not a folder`,
    )
  }
  const rel = path.relative(walked.dir.path, walked.real)
  if (rel === '' || rel === '..' || rel.startsWith('../') || path.isAbsolute(rel)) {
    throw new FileSystemError(
      'INVALID_PATH',
      target.absolute,
      `cannot create ${target.absolute}: it leads through a missing folder back out of ${walked.dir.path}`,
    )
  }
  return rel.split('/')
}

/** Creates (or finds) folder `name` in `dir` and opens it without following a symlink put in its place. */
function makeDir(dir: HeldDir, name: string, shown: string): HeldDir {
  try {
    mkdirSync(procPath(dir.fd, name), 0o777)
  } catch (error) {
    if (errno(error) === 'ENOENT') throw pathChanged(shown, `${dir.path} was removed while folders were created in it`)
    if (errno(error) !== 'EEXIST') throw fromNodeError(error, path.join(dir.path, name))
  }
  try {
    return {
      fd: openSync(procPath(dir.fd, name), O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW),
      path: path.join(dir.path, name),
    }
  } catch (error) {
    const code = errno(error)
    if (code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENOENT') {
      throw pathChanged(shown, `${path.join(dir.path, name)} is not a folder any more`)
    }
    throw fromNodeError(error, path.join(dir.path, name))
  }
}

/**
 * The write itself, inside the folder the walk holds: missing folders are
 * created one by one (each opened without following links), the content goes
 * to a new temporary file there (`O_CREAT|O_EXCL|O_NOFOLLOW`), and is renamed
 * over the target's name in that same folder. Renaming never follows a
 * symlink planted at the name, so nothing can land outside the folder.
 */
async function writeLocal(held: HeldResolution, bytes: Uint8Array, options: WriteFileOptions): Promise<WriteResult> {
  const { path: target, walked } = held
  const opened: number[] = []
  let dir: HeldDir
  let name: string
  let existing: Stats | undefined
  try {
    if (walked.kind === 'found') {
      if (walked.stats.isDirectory() || walked.name === undefined) {
        throw new FileSystemError('IS_DIRECTORY', target.absolute, `${target.absolute} is a folder; give a file path`)
      }
      if (!walked.stats.isFile())
        throw new FileSystemError('NOT_A_FILE', target.absolute, `${target.absolute} is not a regular file`)
      dir = walked.dir
      name = walked.name
      existing = walked.stats
    } else {
      const parts = missingParts(walked, target)
      dir = walked.dir
      for (const part of parts.slice(0, -1)) {
        dir = makeDir(dir, part, target.absolute)
        opened.push(dir.fd)
      }
      name = parts.at(-1) as string
    }
    aborted(options)
    return await replaceIn(dir, name, existing, bytes, target, options)
  } catch (error) {
    // The folder the walk held was deleted under the write.
    if (errno(error) === 'ENOENT' && !options.signal?.aborted)
      throw pathChanged(target.absolute, 'its folder was removed while it was written')
    throw failure(error, target.absolute, options)
  } finally {
    for (const fd of opened) closeQuietly(fd)
  }
}

async function replaceIn(
  dir: HeldDir,
  name: string,
  existing: Stats | undefined,
  bytes: Uint8Array,
  target: ResolvedPath,
  options: WriteFileOptions,
): Promise<WriteResult> {
  verifyFdPath(dir.fd, dir.path, target.absolute)
  // A short random name: the target's own name may already be at the length limit.
  const temp = `.dsh-${randomBytes(8).toString('hex')}.tmp`
  const tempPath = procPath(dir.fd, temp)
  let mtimeMs: number
  try {
    const mode = existing ? existing.mode & 0o7777 : 0o666
    const handle = await open(
      tempPath,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      mode,
    )
    try {
      await handle.writeFile(bytes)
      // The creation mode went through the umask; an overwrite keeps the old file's permissions exactly.
      if (existing) await handle.chmod(existing.mode & 0o7777)
      await handle.sync()
      mtimeMs = (await handle.stat()).mtimeMs
    } finally {
      await handle.close()
    }
    aborted(options)
    checkTargetName(dir, name, target)
    verifyFdPath(dir.fd, dir.path, target.absolute)
    renameSync(tempPath, procPath(dir.fd, name))
  } catch (error) {
    try {
      unlinkSync(tempPath)
    } catch {
      // Never created, or already renamed.
    }
    throw error
  }
  return { path: target, created: existing === undefined, bytes: bytes.length, mtimeMs }
}

/** What sits at the target's name now: a symlink there means the path was swapped after the walk. */
function checkTargetName(dir: HeldDir, name: string, target: ResolvedPath): void {
  let now: Stats
  try {
    now = lstatSync(procPath(dir.fd, name))
  } catch (error) {
    if (errno(error) === 'ENOENT') return
    throw error
  }
  if (now.isSymbolicLink()) throw pathChanged(target.absolute, `${path.join(dir.path, name)} became a symbolic link`)
  if (now.isDirectory())
    throw new FileSystemError('IS_DIRECTORY', target.absolute, `${target.absolute} is a folder; give a file path`)
  if (!now.isFile())
    throw new FileSystemError('NOT_A_FILE', target.absolute, `${target.absolute} is not a regular file`)
}

/**
 * Opens the file the walk found for reading, through its own descriptor
 * (never by path again), after refusing folders and special files.
 */
async function openFile(held: HeldResolution, options: FsCallOptions): Promise<FileHandle> {
  const target = held.path
  const { fd, stats } = found(held.walked, target)
  if (stats.isDirectory())
    throw new FileSystemError('IS_DIRECTORY', target.absolute, `${target.absolute} is a folder, not a file`)
  if (!stats.isFile())
    throw new FileSystemError('NOT_A_FILE', target.absolute, `${target.absolute} is not a regular file`)
  let handle: FileHandle
  try {
    // Non-blocking, so that a named pipe cannot hang the open.
    handle = await open(procPath(fd), constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (error) {
    throw failure(error, target.absolute, options)
  }
  try {
    verifyFdPath(handle.fd, target.real, target.absolute)
    return handle
  } catch (error) {
    await handle.close().catch(() => {})
    throw error
  }
}

function statOf(target: ResolvedPath, info: Stats): FileStat {
  return { path: target, type: typeOf(info), size: info.size, mtimeMs: info.mtimeMs, mode: info.mode & 0o7777 }
}

/** Reads to the end of the file, or one byte past `limit` (so the caller can tell it was exceeded). */
async function readAll(
  handle: FileHandle,
  limit: number | undefined,
  signal: AbortSignal | undefined,
): Promise<Buffer> {
  const chunks: Buffer[] = []
  let total = 0
  const cap = limit === undefined ? Number.POSITIVE_INFINITY : limit + 1
  while (total < cap) {
    signal?.throwIfAborted()
    const size = Math.min(1 << 20, cap - total)
    const chunk = Buffer.allocUnsafe(size)
    const { bytesRead } = await handle.read(chunk, 0, size, total)
    if (bytesRead === 0) break
    chunks.push(bytesRead === size ? chunk : chunk.subarray(0, bytesRead))
    total += bytesRead
  }
  return Buffer.concat(chunks, total)
}
