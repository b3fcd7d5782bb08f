import { lstat, readlink, realpath } from 'node:fs/promises'
import path from 'node:path'
import { FileSystemError, type ResolvedPath, type ResolveOptions } from './seam.ts'

/** Linux gives up after 40 symlinks in one lookup; so do we. */
const MAX_SYMLINK_HOPS = 40

export function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code
}

function invalid(given: string, message: string): FileSystemError {
  return new FileSystemError('INVALID_PATH', given, message)
}

/** Rejects what no file system call should ever see: non-strings, empty paths, NUL bytes. */
export function checkPathText(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalid(String(value), `${what} must be a string, got ${value === null ? 'null' : typeof value}`)
  if (value === '') throw invalid(value, `${what} is empty`)
  if (value.includes('\0')) throw invalid(value.replace(/\0/g, '\\0'), `${what} contains a NUL byte: ${JSON.stringify(value)}`)
  return value
}

/** `child` is `root` or lies below it (both absolute and normalized). */
export function isWithin(root: string, child: string): boolean {
  if (child === root) return true
  const prefix = root.endsWith(path.sep) ? root : root + path.sep
  return child.startsWith(prefix)
}

/**
 * Where an absolute path really leads: every symlink that exists is followed
 * (dangling ones too, to where they point), and the part that does not exist
 * yet is appended as written.
 */
export async function realLocation(absolute: string): Promise<string> {
  try {
    return await realpath(absolute)
  } catch (error) {
    const code = errno(error)
    if (code === 'ELOOP') throw new FileSystemError('LOOP', absolute, `too many levels of symbolic links in ${absolute}`, undefined, { cause: error })
    if (code === 'ENAMETOOLONG') throw invalid(absolute, `the path is too long: ${absolute.slice(0, 200)}…`)
    if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'EACCES') {
      throw new FileSystemError('IO', absolute, `could not resolve ${absolute}: ${(error as Error).message}`, undefined, { cause: error })
    }
  }
  return walk(absolute)
}

/** Follows the path one component at a time, as the kernel would, stopping where it stops existing. */
async function walk(absolute: string): Promise<string> {
  const root = path.parse(absolute).root
  // A stack of the components still to visit, next one last.
  const pending = absolute.slice(root.length).split(path.sep).filter(Boolean).reverse()
  let current = root
  let hops = 0
  while (pending.length > 0) {
    const part = pending.pop() as string
    if (part === '.') continue
    if (part === '..') {
      current = path.dirname(current)
      continue
    }
    const next = path.join(current, part)
    let isLink: boolean
    try {
      isLink = (await lstat(next)).isSymbolicLink()
    } catch (error) {
      const code = errno(error)
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') return path.join(next, ...pending.reverse())
      if (code === 'ENAMETOOLONG') throw invalid(absolute, `the path is too long: ${absolute.slice(0, 200)}…`)
      throw new FileSystemError('IO', absolute, `could not resolve ${absolute}: ${(error as Error).message}`, undefined, { cause: error })
    }
    if (!isLink) {
      current = next
      continue
    }
    hops += 1
    if (hops > MAX_SYMLINK_HOPS) throw new FileSystemError('LOOP', absolute, `too many levels of symbolic links in ${absolute}`)
    const target = await readlink(next)
    pending.push(...target.split(path.sep).filter(Boolean).reverse())
    if (path.isAbsolute(target)) current = path.parse(target).root
  }
  return current
}

/** The local-disk resolution behind `FileSystem.resolve`. */
export async function resolveLocal(given: unknown, options: ResolveOptions): Promise<ResolvedPath> {
  const text = checkPathText(given, 'the path')
  const cwd = checkPathText(options?.cwd, 'the working directory (cwd)')
  if (!path.isAbsolute(cwd)) throw invalid(cwd, `the working directory must be absolute, got ${JSON.stringify(cwd)}`)
  let workspaceRoot = cwd
  if (options.workspace !== undefined) {
    workspaceRoot = checkPathText(options.workspace, 'the workspace root')
    if (!path.isAbsolute(workspaceRoot)) throw invalid(workspaceRoot, `the workspace root must be absolute, got ${JSON.stringify(workspaceRoot)}`)
  }
  const absolute = path.resolve(cwd, text)
  const [real, workspace] = await Promise.all([realLocation(absolute), realLocation(path.resolve(workspaceRoot))])
  return { absolute, real, workspace, insideWorkspace: isWithin(workspace, real) }
}
