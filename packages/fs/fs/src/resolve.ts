import path from 'node:path'
import { FileSystemError, type ResolvedPath, type ResolveOptions } from './seam.ts'
import { release, type Walked, walk } from './walk.ts'

function invalid(given: string, message: string): FileSystemError {
  return new FileSystemError('INVALID_PATH', given, message)
}

/** Rejects what no file system call should ever see: non-strings, empty paths, NUL bytes. */
export function checkPathText(value: unknown, what: string): string {
  if (typeof value !== 'string')
    throw invalid(String(value), `${what} must be a string, got ${value === null ? 'null' : typeof value}`)
  if (value === '') throw invalid(value, `${what} is empty`)
  if (value.includes('\0'))
    throw invalid(value.replace(/\0/g, '\\0'), `${what} contains a NUL byte: ${JSON.stringify(value)}`)
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
 * yet is appended as written. Worked out through descriptors (see walk.ts).
 */
export function realLocation(absolute: string): string {
  const walked = walk(absolute)
  release(walked)
  return walked.real
}

/** A resolution with the descriptors of its walk still open; the caller must `release(walked)`. */
export interface HeldResolution {
  path: ResolvedPath
  walked: Walked
}

/** The local-disk resolution behind `FileSystem.resolve`. */
export async function resolveLocal(given: unknown, options: ResolveOptions): Promise<ResolvedPath> {
  const held = resolveHeld(given, options)
  release(held.walked)
  return held.path
}

/** Resolves like `resolveLocal`, keeping the descriptors the walk opened. */
export function resolveHeld(given: unknown, options: ResolveOptions): HeldResolution {
  const text = checkPathText(given, 'the path')
  const cwd = checkPathText(options?.cwd, 'the working directory (cwd)')
  if (!path.isAbsolute(cwd)) throw invalid(cwd, `the working directory must be absolute, got ${JSON.stringify(cwd)}`)
  let workspaceRoot = cwd
  if (options.workspace !== undefined) {
    workspaceRoot = checkPathText(options.workspace, 'the workspace root')
    if (!path.isAbsolute(workspaceRoot))
      throw invalid(workspaceRoot, `the workspace root must be absolute, got ${JSON.stringify(workspaceRoot)}`)
  }
  const absolute = path.resolve(cwd, text)
  const workspace = realLocation(path.resolve(workspaceRoot))
  const walked = walk(absolute)
  const real = walked.real
  return { path: { absolute, real, workspace, insideWorkspace: isWithin(workspace, real) }, walked }
}
