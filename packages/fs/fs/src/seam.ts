import type { Readable } from 'node:stream'
import { type Context, ProviderService } from '@dsh/cordis'
import { type DenyRule, deniedBy, denialReason, denyRules, patternsBelow } from './deny.ts'

declare module '@dsh/cordis' {
  interface Context {
    fs: FileSystem
  }
  interface Events {
    /**
     * @mode waterfall, fired by the provider before it reads anything
     * (`stat`, `readFile`, `readStream`, `readdir`). Return a decision or call
     * `next()` to defer; the innermost answer is allow. A deny makes the call
     * throw a `FileSystemError` with code `DENIED`.
     */
    'fs/read'(request: FsAccessRequest, next: () => Promise<FsDecision>): FsDecision | Promise<FsDecision>
    /**
     * @mode waterfall, fired by the provider before it changes anything
     * (`writeFile`, `mkdir`). Same contract as `fs/read`.
     */
    'fs/write'(request: FsAccessRequest, next: () => Promise<FsDecision>): FsDecision | Promise<FsDecision>
    /**
     * @mode waterfall, fired by the provider after `fs/read` allowed
     * `readFile` or `readStream`. A listener may answer with the file's whole
     * content from elsewhere (an editor's unsaved buffer) instead of calling
     * `next()`; the innermost answer, undefined, reads the provider's storage.
     */
    'fs/read-content'(
      request: FsAccessRequest,
      next: () => Promise<Uint8Array | undefined>,
    ): Promise<Uint8Array | undefined>
    /**
     * @mode waterfall, fired by the provider after `fs/write` allowed
     * `writeFile`. A listener may store the data elsewhere (an editor's
     * buffer) and answer with its own result instead of calling `next()`,
     * which writes to the provider's storage.
     */
    'fs/write-content'(request: FsWriteContentRequest, next: () => Promise<WriteResult>): Promise<WriteResult>
  }
}

/** Where a path leads, worked out before any access. */
export interface ResolvedPath {
  /** The path made absolute against `cwd` and normalized lexically; no symlink followed. */
  readonly absolute: string
  /**
   * `absolute` with every symlink that exists followed, as far as the path
   * exists; a missing tail is appended as written. This is where an access
   * actually lands.
   */
  readonly real: string
  /** The workspace root, with its own symlinks followed. */
  readonly workspace: string
  /** `real` is the workspace root or lies below it. A `..` or a symlink that leaves the root makes this false. */
  readonly insideWorkspace: boolean
}

export interface ResolveOptions {
  /** Absolute folder that relative paths start from. Also the workspace root, unless `workspace` is given. */
  cwd: string
  /** Absolute workspace root, when it differs from `cwd`. */
  workspace?: string
}

/** What every access takes besides the path. */
export interface FsCallOptions extends ResolveOptions {
  /** The session on whose behalf the access happens; handed to policy listeners. */
  sessionId?: string
  /** Aborts the access; the call then rejects with the signal's reason. */
  signal?: AbortSignal
  /**
   * The real location a policy already checked for this path (see
   * `recordChecked`). When the path now leads anywhere else, the call fails
   * with `PATH_CHANGED` instead of acting on a location nobody checked.
   */
  expectReal?: string
}

export interface ReadFileOptions extends FsCallOptions {
  /** Refuse (`TOO_LARGE`) a file bigger than this many bytes instead of loading it. */
  maxBytes?: number
}

export interface ReadStreamOptions extends FsCallOptions {
  /** First byte to read (default 0). */
  start?: number
  /** Last byte to read, inclusive (default: to the end). */
  end?: number
}

export interface WriteFileOptions extends FsCallOptions {}

export type FsOperation = 'stat' | 'readFile' | 'readStream' | 'readdir' | 'writeFile' | 'mkdir' | 'hold'

/** The paths no tool may read, list or change (the deny-read list). Entries are absolute or start with `~/`; `*` matches within one segment. */
export interface DenyListConfig {
  /** dsh's own secret store: the bundles list `$DSH_HOME/.credentials.yaml`, `$DSH_HOME/.env` and the profiles' copies. */
  secretFiles?: string[]
  /** More paths to refuse, e.g. `~/.ssh`, `~/.aws`. */
  denyRead?: string[]
}

/**
 * A file or folder held open by `FileSystem.hold`. `local` is a path on the
 * local disk that leads to exactly the held file (a descriptor's magic link),
 * for handing to a process such as ripgrep; it stays valid until `close`.
 */
export interface HeldPath {
  path: ResolvedPath
  type: Exclude<FileType, 'symlink'>
  local: string
  /** Fails with `PATH_CHANGED` when the held file or folder has been moved away from `path.real` since it was opened. */
  verify(): void
  close(): void
}

/** What a policy listener of `fs/read` or `fs/write` is asked about. */
export interface FsAccessRequest {
  readonly path: ResolvedPath
  readonly operation: FsOperation
  readonly sessionId?: string
}

/** What a `fs/write-content` listener is handed: the access and the bytes to store. */
export interface FsWriteContentRequest extends FsAccessRequest {
  readonly data: Uint8Array
}

/** A policy answer. */
export type FsDecision = { kind: 'allow' } | { kind: 'deny'; reason: string }

export type FileType = 'file' | 'directory' | 'symlink' | 'other'

/** Facts about a file, symlinks followed. */
export interface FileStat {
  path: ResolvedPath
  /** Never `symlink`: `stat` follows links. */
  type: Exclude<FileType, 'symlink'>
  size: number
  mtimeMs: number
  /** Permission bits (`mode & 0o7777`). */
  mode: number
}

/** One entry of a folder, as the folder lists it: a symlink is reported as `symlink`, not followed. */
export interface DirEntry {
  name: string
  type: FileType
}

export interface WriteResult {
  path: ResolvedPath
  /** Nothing was there before. */
  created: boolean
  bytes: number
  /** Modification time of the new content. */
  mtimeMs: number
}

export type FsErrorCode =
  | 'INVALID_PATH'
  | 'DENIED'
  | 'NOT_FOUND'
  | 'IS_DIRECTORY'
  | 'NOT_DIRECTORY'
  | 'NOT_A_FILE'
  | 'PERMISSION'
  | 'TOO_LARGE'
  | 'LOOP'
  | 'PATH_CHANGED'
  | 'IO'

/** Every failure of the seam: a code to branch on, the path involved, and a message naming it. */
export class FileSystemError extends Error {
  override name = 'FileSystemError'

  constructor(
    readonly code: FsErrorCode,
    /** The path as resolved (absolute), or as given when it could not be resolved. */
    readonly path: string,
    message: string,
    /** With `DENIED`: the reason the policy gave. */
    readonly reason?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/**
 * `ctx.fs`: the file system every file tool goes through. A provider plugin
 * extends this class (the local disk, a remote machine, a sandbox); swapping
 * it changes every consumer at once.
 *
 * Paths are strings as the model gave them; each call resolves its path
 * against `options.cwd`, asks the policy (`fs/read` or `fs/write`) through
 * `authorize`, then acts on the real location. The seam itself never refuses
 * a path for lying outside the workspace: that is a policy's decision.
 */
export abstract class FileSystem extends ProviderService {
  /** The deny-read list, checked before every policy listener. */
  protected readonly denied: readonly DenyRule[]

  /** Throws a `DenyListError` naming the field and entry when the deny list holds a relative path. */
  constructor(ctx: Context, config: DenyListConfig = {}) {
    super(ctx, 'fs')
    this.denied = [...denyRules('secretFiles', config.secretFiles), ...denyRules('denyRead', config.denyRead)]
  }

  /**
   * Why tools may not touch a real (canonical) path: it lies on the deny-read
   * list. Undefined when it may be touched as far as the list goes. Search
   * tools use it to leave such files out of what they list.
   */
  deniedReason(real: string): string | undefined {
    const rule = deniedBy(this.denied, real)
    return rule && denialReason(rule, real)
  }

  /**
   * The deny-list patterns that reach below the real folder `root`, as path
   * segments relative to it (`*` matches within a segment), for a tool that
   * walks the folder by other means (ripgrep) and must leave them out.
   */
  deniedBelow(root: string): string[][] {
    return patternsBelow(this.denied, root)
  }

  /** Works out where `path` leads. Throws `INVALID_PATH` for a NUL byte, an empty path or a relative `cwd`. */
  abstract resolve(path: string, options: ResolveOptions): Promise<ResolvedPath>

  /** Facts about a file or folder, symlinks followed. `fs/read`. */
  abstract stat(path: string, options: FsCallOptions): Promise<FileStat>

  /** The whole content of a regular file. `fs/read`. */
  abstract readFile(path: string, options: ReadFileOptions): Promise<Buffer>

  /** A stream over (part of) a regular file, opened before it is returned. `fs/read`. */
  abstract readStream(path: string, options: ReadStreamOptions): Promise<Readable>

  /**
   * Replaces or creates a regular file atomically: the new content goes to a
   * temporary file in the same folder, which is then renamed over the
   * target. Missing parent folders are created. Writing through a symlink
   * changes its target and keeps the link. `fs/write`.
   */
  abstract writeFile(path: string, data: string | Uint8Array, options: WriteFileOptions): Promise<WriteResult>

  /** The entries of a folder, sorted by name. `fs/read`. */
  abstract readdir(path: string, options: FsCallOptions): Promise<DirEntry[]>

  /** Creates a folder and its missing parents; an existing folder is fine. `fs/write`. */
  abstract mkdir(path: string, options: FsCallOptions): Promise<ResolvedPath>

  /**
   * Resolves a file or folder, asks the policy, and keeps it open, so that a
   * local process handed `local` works on exactly what the policy saw, even if
   * the path is swapped afterwards. `fs/read`. The caller must `close` it.
   */
  abstract hold(path: string, options: FsCallOptions): Promise<HeldPath>

  /**
   * Asks the policy listeners whether the access may happen and throws a
   * `DENIED` error naming the path and the reason if not. A listener that
   * throws or answers nonsense counts as a denial: the policy fails closed.
   * Providers call this after resolving and before touching anything.
   */
  protected async authorize(
    kind: 'read' | 'write',
    operation: FsOperation,
    path: ResolvedPath,
    options: FsCallOptions,
  ): Promise<void> {
    const event = kind === 'read' ? 'fs/read' : 'fs/write'
    const where = path.real === path.absolute ? path.absolute : `${path.absolute} (which leads to ${path.real})`
    if (options.expectReal !== undefined && options.expectReal !== path.real) {
      throw new FileSystemError(
        'PATH_CHANGED',
        path.absolute,
        `${path.absolute} changed while it was being opened: it was checked as ${options.expectReal} and now leads to ${path.real}; nothing was done.`,
      )
    }
    const secret = this.deniedReason(path.real)
    if (secret !== undefined)
      throw new FileSystemError('DENIED', path.absolute, `${kind} access to ${where} was denied: ${secret}`, secret)
    const request: FsAccessRequest = Object.freeze({
      path: Object.freeze({ ...path }),
      operation,
      sessionId: options.sessionId,
    })
    let decision: FsDecision | undefined
    let failure: string | undefined
    try {
      decision = await this.home.waterfall(event, request, async (): Promise<FsDecision> => ({ kind: 'allow' }))
    } catch (error) {
      this.home.logger.warn(
        'an %s listener failed for %s: %s',
        event,
        path.absolute,
        error instanceof Error ? error.message : String(error),
      )
      failure = `the ${event} policy check failed (${error instanceof Error ? error.message : String(error)})`
    }
    if (decision?.kind === 'allow') return
    const reason =
      decision?.kind === 'deny'
        ? String(decision.reason ?? 'no reason given')
        : (failure ?? `the ${event} policy gave no usable answer`)
    throw new FileSystemError('DENIED', path.absolute, `${kind} access to ${where} was denied: ${reason}`, reason)
  }

  /**
   * The content a `fs/read-content` listener supplies in place of the
   * stored one, if any. Providers call this after `authorize` in `readFile`
   * and `readStream`. A listener failure becomes an `IO` error naming the path.
   */
  protected async suppliedContent(
    operation: FsOperation,
    path: ResolvedPath,
    options: FsCallOptions,
  ): Promise<Buffer | undefined> {
    const request: FsAccessRequest = Object.freeze({
      path: Object.freeze({ ...path }),
      operation,
      sessionId: options.sessionId,
    })
    let supplied: Uint8Array | undefined
    try {
      supplied = await this.home.waterfall('fs/read-content', request, async () => undefined)
    } catch (error) {
      throw this.contentFailure('read', path, error, options)
    }
    if (supplied === undefined) return undefined
    if (!(supplied instanceof Uint8Array))
      throw new FileSystemError(
        'IO',
        path.absolute,
        `could not read ${path.absolute}: a fs/read-content listener answered with something other than bytes`,
      )
    return Buffer.isBuffer(supplied) ? supplied : Buffer.from(supplied.buffer, supplied.byteOffset, supplied.byteLength)
  }

  /**
   * Runs `write` (the provider's own store) unless a `fs/write-content`
   * listener stores the data elsewhere. Providers call this after `authorize`
   * in `writeFile`. A listener failure becomes an `IO` error naming the path.
   */
  protected async storeContent(
    path: ResolvedPath,
    data: Uint8Array,
    options: FsCallOptions,
    write: () => Promise<WriteResult>,
  ): Promise<WriteResult> {
    const request: FsWriteContentRequest = Object.freeze({
      path: Object.freeze({ ...path }),
      operation: 'writeFile',
      sessionId: options.sessionId,
      data,
    })
    let ownFailure = false
    try {
      return await this.home.waterfall('fs/write-content', request, () =>
        write().catch((error: unknown) => {
          ownFailure = true
          throw error
        }),
      )
    } catch (error) {
      if (ownFailure) throw error
      throw this.contentFailure('write', path, error, options)
    }
  }

  private contentFailure(kind: 'read' | 'write', path: ResolvedPath, error: unknown, options: FsCallOptions): unknown {
    if (options.signal?.aborted) return options.signal.reason
    if (error instanceof FileSystemError) return error
    const message = error instanceof Error ? error.message : String(error)
    return new FileSystemError('IO', path.absolute, `could not ${kind} ${path.absolute}: ${message}`, undefined, {
      cause: error,
    })
  }
}
