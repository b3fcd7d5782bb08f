import { closeSync, constants, fstatSync, openSync, readlinkSync, type Stats } from 'node:fs'
import path from 'node:path'
import { FileSystemError } from './seam.ts'

/**
 * Resolution through descriptors. Node has no `openat`, so each component is
 * opened relative to the folder already open through that folder's magic link
 * `/proc/self/fd/<fd>/<name>`: the kernel starts from the folder the
 * descriptor holds, not from its path, so a component swapped for a symlink
 * after the walk passed it cannot redirect what follows. Every component is
 * opened with `O_NOFOLLOW`; a symlink is read and followed by the walk itself,
 * so the final location is always known and can be shown to a policy.
 */

/** `O_PATH` (Linux): a descriptor that names a file without opening it for I/O; Node does not export the constant. */
export const O_PATH = 0o10000000

/** Linux gives up after 40 symlinks in one lookup; so do we. */
const MAX_SYMLINK_HOPS = 40

/** A folder held open, and its real path. */
export interface HeldDir {
  fd: number
  path: string
}

/** Where a walk ended. Either way the caller owns the descriptors and must `release` them. */
export type Walked =
  | {
      kind: 'found'
      /** The folder holding the target; the target itself when `name` is undefined (the root, or a path ending in `..`). */
      dir: HeldDir
      name: string | undefined
      /** An `O_PATH` descriptor of the target (never a symlink), and its facts. */
      fd: number
      stats: Stats
      real: string
    }
  | {
      kind: 'missing'
      /** The deepest folder that exists. */
      dir: HeldDir
      /** The components below `dir` as written; the first one is absent (`absent`) or is not a folder (`not-a-directory`). */
      rest: string[]
      blocked: 'absent' | 'not-a-directory'
      real: string
    }

export function procPath(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`
}

/** The error for a path the system finds too long (ENAMETOOLONG); the message shows its first 200 characters. */
export function pathTooLong(shown: string, cause: { cause: unknown }): FileSystemError {
  return new FileSystemError('INVALID_PATH', shown, `the path is too long: ${shown.slice(0, 200)}…`, undefined, cause)
}

export function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code
}

export function closeQuietly(fd: number | undefined): void {
  if (fd === undefined) return
  try {
    closeSync(fd)
  } catch {
    // Already closed or never valid: nothing to release.
  }
}

/** Closes every descriptor a walk left open. */
export function release(walked: Walked): void {
  closeQuietly(walked.dir.fd)
  if (walked.kind === 'found' && walked.fd !== walked.dir.fd) closeQuietly(walked.fd)
}

/** The error a swapped or moved component gives: the model reads it, so it says what happened. */
export function pathChanged(shown: string, detail: string): FileSystemError {
  return new FileSystemError(
    'PATH_CHANGED',
    shown,
    `${shown} changed while it was being opened (${detail}); nothing was done. Retry only if you expect the path to be stable.`,
  )
}

/** Fails with `PATH_CHANGED` unless the descriptor still names `expected` (a folder or file moved since it was opened). */
export function verifyFdPath(fd: number, expected: string, shown: string): void {
  let actual: string
  try {
    actual = readlinkSync(procPath(fd))
  } catch (error) {
    throw new FileSystemError(
      'IO',
      shown,
      `could not check where ${shown} lies: ${(error as Error).message}`,
      undefined,
      { cause: error },
    )
  }
  if (actual !== expected) throw pathChanged(shown, `it was opened at ${expected} and now lies at ${actual}`)
}

function openRoot(): HeldDir {
  try {
    const fd = openSync('/', O_PATH | constants.O_DIRECTORY)
    // The magic links are what make the walk safe; without /proc there is no safe walk.
    readlinkSync(procPath(fd))
    return { fd, path: '/' }
  } catch (error) {
    throw new FileSystemError(
      'IO',
      '/',
      `cannot resolve paths safely: /proc/self/fd is not available (${(error as Error).message}); mount /proc`,
      undefined,
      {
        cause: error,
      },
    )
  }
}

/** The parent of a held folder, opened through the folder itself. */
function parentOf(dir: HeldDir): HeldDir {
  if (dir.path === '/') return dir
  const fd = openSync(procPath(dir.fd, '..'), O_PATH | constants.O_DIRECTORY)
  closeQuietly(dir.fd)
  return { fd, path: path.dirname(dir.path) }
}

/**
 * Walks an absolute, lexically normalized path from `/`, one component at a
 * time, following symlinks itself (a symlink at the end too). Stops where the
 * path stops existing. `shown` names the path in errors.
 */
export function walk(absolute: string, shown: string = absolute): Walked {
  const pending = absolute.split('/').filter(Boolean).reverse()
  let dir = openRoot()
  let hops = 0
  try {
    while (pending.length > 0) {
      const part = pending.pop() as string
      if (part === '.') continue
      if (part === '..') {
        dir = parentOf(dir)
        continue
      }
      let fd: number
      try {
        fd = openSync(procPath(dir.fd, part), O_PATH | constants.O_NOFOLLOW)
      } catch (error) {
        const code = errno(error)
        if (code === 'ENOENT') return missing(dir, [part, ...pending.reverse()], 'absent')
        throw walkError(error, shown)
      }
      const stats = fstatSync(fd)
      if (stats.isSymbolicLink()) {
        let target: string
        try {
          target = readlinkSync(procPath(dir.fd, part))
        } catch (error) {
          closeQuietly(fd)
          // Replaced by something that is not a link between the open and the read.
          if (errno(error) === 'EINVAL' || errno(error) === 'ENOENT')
            throw pathChanged(shown, `${path.join(dir.path, part)} was replaced while it was read`)
          throw walkError(error, shown)
        }
        closeQuietly(fd)
        hops += 1
        if (hops > MAX_SYMLINK_HOPS)
          throw new FileSystemError('LOOP', shown, `too many levels of symbolic links in ${shown}`)
        pending.push(...target.split('/').filter(Boolean).reverse())
        if (target.startsWith('/')) {
          closeQuietly(dir.fd)
          dir = openRoot()
        }
        continue
      }
      const here = path.join(dir.path, part)
      if (pending.length === 0) return { kind: 'found', dir, name: part, fd, stats, real: here }
      if (!stats.isDirectory()) {
        closeQuietly(fd)
        return missing(dir, [part, ...pending.reverse()], 'not-a-directory')
      }
      closeQuietly(dir.fd)
      dir = { fd, path: here }
    }
    // The path ends at a folder reached without a name: `/`, or a `..` last.
    return { kind: 'found', dir, name: undefined, fd: dir.fd, stats: fstatSync(dir.fd), real: dir.path }
  } catch (error) {
    closeQuietly(dir.fd)
    throw error
  }
}

function missing(dir: HeldDir, rest: string[], blocked: 'absent' | 'not-a-directory'): Walked {
  return { kind: 'missing', dir, rest, blocked, real: path.join(dir.path, ...rest) }
}

function walkError(error: unknown, shown: string): FileSystemError {
  const cause = { cause: error }
  switch (errno(error)) {
    case 'EACCES':
    case 'EPERM':
      return new FileSystemError('PERMISSION', shown, `permission denied: ${shown}`, undefined, cause)
    case 'ENAMETOOLONG':
      return pathTooLong(shown, cause)
    case 'ELOOP':
      return new FileSystemError('LOOP', shown, `too many levels of symbolic links in ${shown}`, undefined, cause)
    default:
      return new FileSystemError(
        'IO',
        shown,
        `could not resolve ${shown}: ${(error as Error).message}`,
        undefined,
        cause,
      )
  }
}
