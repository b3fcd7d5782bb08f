import { type Context, Schema } from '@dsh/cordis'
import { LocalFileSystem } from './local.ts'

export {
  type DirEntry,
  type FileStat,
  FileSystem,
  FileSystemError,
  type FileType,
  type FsAccessRequest,
  type FsCallOptions,
  type FsDecision,
  type FsErrorCode,
  type FsOperation,
  type FsWriteContentRequest,
  type ReadFileOptions,
  type ReadStreamOptions,
  type ResolvedPath,
  type ResolveOptions,
  type WriteFileOptions,
  type WriteResult,
} from './seam.ts'
export { fromNodeError, LocalFileSystem } from './local.ts'
export { isWithin } from './resolve.ts'

export const name = 'fs'

// The local provider has nothing to configure yet.
export interface LocalFsConfig {}

export const Config: Schema<LocalFsConfig> = Schema.object({})

/** Provides `ctx.fs` on the local disk. */
export function apply(ctx: Context) {
  ctx.plugin(LocalFileSystem)
}
