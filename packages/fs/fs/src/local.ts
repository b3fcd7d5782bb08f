import { randomBytes } from 'node:crypto'
import { constants, type Stats } from 'node:fs'
import { type FileHandle, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import type { Context } from '@dsh/cordis'
import { errno, resolveLocal } from './resolve.ts'
import {
  type DirEntry,
  type FileStat,
  FileSystem,
  FileSystemError,
  type FileType,
  type FsCallOptions,
  type FsOperation,
  type ReadFileOptions,
  type ReadStreamOptions,
  type ResolvedPath,
  type ResolveOptions,
  type WriteFileOptions,
  type WriteResult,
} from './seam.ts'

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
      return new FileSystemError('INVALID_PATH', target, `the path is too long: ${target.slice(0, 200)}…`, undefined, cause)
    default:
      return new FileSystemError('IO', target, `could not access ${target}: ${message}`, undefined, cause)
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
 * `ctx.fs` on the local disk. Every access resolves the path, asks the
 * policy, and then works on the real location, so a symlink is followed
 * exactly as far as the policy saw it followed.
 */
export class LocalFileSystem extends FileSystem {
  constructor(ctx: Context) {
    super(ctx)
  }

  resolve(given: string, options: ResolveOptions): Promise<ResolvedPath> {
    return resolveLocal(given, options)
  }

  async stat(given: string, options: FsCallOptions): Promise<FileStat> {
    const target = await this.prepare('read', 'stat', given, options)
    try {
      return statOf(target, await stat(target.real))
    } catch (error) {
      throw failure(error, target.absolute, options)
    }
  }

  async readFile(given: string, options: ReadFileOptions): Promise<Buffer> {
    const target = await this.prepare('read', 'readFile', given, options)
    const supplied = await this.suppliedContent('readFile', target, options)
    if (supplied) {
      const limit = options.maxBytes
      if (limit !== undefined && supplied.length > limit) {
        throw new FileSystemError('TOO_LARGE', target.absolute, `${target.absolute} is ${supplied.length} bytes, more than the ${limit} allowed`)
      }
      return supplied
    }
    const handle = await this.openFile(target, options)
    try {
      const info = await handle.stat()
      const limit = options.maxBytes
      if (limit !== undefined && info.size > limit) {
        throw new FileSystemError('TOO_LARGE', target.absolute, `${target.absolute} is ${info.size} bytes, more than the ${limit} allowed`)
      }
      const data = await readAll(handle, limit, options.signal)
      if (limit !== undefined && data.length > limit) {
        throw new FileSystemError('TOO_LARGE', target.absolute, `${target.absolute} grew past the ${limit} bytes allowed while it was read`)
      }
      return data
    } catch (error) {
      throw failure(error, target.absolute, options)
    } finally {
      await handle.close().catch(() => {})
    }
  }

  async readStream(given: string, options: ReadStreamOptions): Promise<Readable> {
    const target = await this.prepare('read', 'readStream', given, options)
    const supplied = await this.suppliedContent('readStream', target, options)
    if (supplied) {
      const range = supplied.subarray(options.start ?? 0, options.end === undefined ? undefined : options.end + 1)
      return Readable.from(range.length > 0 ? [range] : [])
    }
    const handle = await this.openFile(target, options)
    const stream = handle.createReadStream({ start: options.start, end: options.end, autoClose: true })
    const signal = options.signal
    if (signal) {
      const stop = () => stream.destroy(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)))
      signal.addEventListener('abort', stop, { once: true })
      stream.once('close', () => signal.removeEventListener('abort', stop))
    }
    return stream
  }

  async writeFile(given: string, data: string | Uint8Array, options: WriteFileOptions): Promise<WriteResult> {
    const target = await this.prepare('write', 'writeFile', given, options)
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
    return this.storeContent(target, bytes, options, () => this.writeLocal(target, bytes, options))
  }

  private async writeLocal(target: ResolvedPath, bytes: Uint8Array, options: WriteFileOptions): Promise<WriteResult> {
    let existing: Stats | undefined
    try {
      existing = await stat(target.real)
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw failure(error, target.absolute, options)
    }
    if (existing?.isDirectory()) throw new FileSystemError('IS_DIRECTORY', target.absolute, `${target.absolute} is a folder; give a file path`)
    if (existing && !existing.isFile()) throw new FileSystemError('NOT_A_FILE', target.absolute, `${target.absolute} is not a regular file`)

    const folder = path.dirname(target.real)
    try {
      await mkdir(folder, { recursive: true })
    } catch (error) {
      throw failure(error, path.dirname(target.absolute), options)
    }
    aborted(options)
    // A short random name: the target's own name may already be at the length limit.
    const temp = path.join(folder, `.dsh-${randomBytes(8).toString('hex')}.tmp`)
    let mtimeMs: number
    try {
      const handle = await open(temp, 'wx', existing ? existing.mode & 0o7777 : 0o666)
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
      await rename(temp, target.real)
    } catch (error) {
      await unlink(temp).catch(() => {})
      throw failure(error, target.absolute, options)
    }
    return { path: target, created: existing === undefined, bytes: bytes.length, mtimeMs }
  }

  async readdir(given: string, options: FsCallOptions): Promise<DirEntry[]> {
    const target = await this.prepare('read', 'readdir', given, options)
    try {
      const entries = await readdir(target.real, { withFileTypes: true })
      return entries
        .map((entry): DirEntry => ({
          name: entry.name,
          type: entry.isSymbolicLink() ? 'symlink' : entry.isDirectory() ? 'directory' : entry.isFile() ? 'file' : 'other',
        }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    } catch (error) {
      throw failure(error, target.absolute, options)
    }
  }

  async mkdir(given: string, options: FsCallOptions): Promise<ResolvedPath> {
    const target = await this.prepare('write', 'mkdir', given, options)
    try {
      await mkdir(target.real, { recursive: true })
    } catch (error) {
      throw failure(error, target.absolute, options)
    }
    return target
  }

  /** Resolve, check the abort signal, ask the policy. */
  private async prepare(kind: 'read' | 'write', operation: FsOperation, given: string, options: FsCallOptions) {
    aborted(options)
    const target = await this.resolve(given, options)
    await this.authorize(kind, operation, target, options)
    aborted(options)
    return target
  }

  /** Opens a regular file for reading; folders and special files are refused. */
  private async openFile(target: ResolvedPath, options: FsCallOptions): Promise<FileHandle> {
    let handle: FileHandle
    try {
      // Non-blocking, so that a named pipe in place of a file is refused below instead of hanging the open.
      handle = await open(target.real, constants.O_RDONLY | constants.O_NONBLOCK)
    } catch (error) {
      throw failure(error, target.absolute, options)
    }
    try {
      const info = await handle.stat()
      if (info.isDirectory()) throw new FileSystemError('IS_DIRECTORY', target.absolute, `${target.absolute} is a folder, not a file`)
      if (!info.isFile()) throw new FileSystemError('NOT_A_FILE', target.absolute, `${target.absolute} is not a regular file`)
      return handle
    } catch (error) {
      await handle.close().catch(() => {})
      throw failure(error, target.absolute, options)
    }
  }
}

function statOf(target: ResolvedPath, info: Stats): FileStat {
  return { path: target, type: typeOf(info), size: info.size, mtimeMs: info.mtimeMs, mode: info.mode & 0o7777 }
}

/** Reads to the end of the file, or one byte past `limit` (so the caller can tell it was exceeded). */
async function readAll(handle: FileHandle, limit: number | undefined, signal: AbortSignal | undefined): Promise<Buffer> {
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
