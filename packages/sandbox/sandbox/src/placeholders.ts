import { lstat, mkdir, open, rmdir, unlink } from 'node:fs/promises'
import path from 'node:path'

/**
 * Empty read-only stand-ins for protected paths that do not exist yet. bwrap
 * can only mount over something that exists, so before a command starts an
 * empty folder (or an empty file, for a name with an extension such as
 * `.mcp.json`) is created and then bound read-only: the command sees it and
 * cannot replace it. After the last command using it ends, it is removed
 * again, but only while still empty, so nothing a user wrote is ever lost.
 */
export class Placeholders {
  private readonly users = new Map<string, number>()

  /** Creates the stand-in for `target` (or counts one more user of it). Returns whether it exists now. */
  async acquire(target: string): Promise<boolean> {
    const count = this.users.get(target)
    if (count !== undefined) {
      this.users.set(target, count + 1)
      return true
    }
    try {
      if (isFileName(target)) await (await open(target, 'wx', 0o644)).close()
      else await mkdir(target, { mode: 0o755 })
    } catch (error) {
      // Someone created it meanwhile: it is no placeholder of ours, and it exists.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return true
      return false
    }
    this.users.set(target, 1)
    return true
  }

  /** One user of `target` is done; the last one removes it if it is still an empty stand-in. */
  async release(target: string): Promise<void> {
    const count = this.users.get(target)
    if (count === undefined) return
    if (count > 1) {
      this.users.set(target, count - 1)
      return
    }
    this.users.delete(target)
    try {
      const info = await lstat(target)
      if (info.isDirectory()) await rmdir(target)
      else if (info.isFile() && info.size === 0) await unlink(target)
    } catch {
      // Not empty any more, or gone: leave it.
    }
  }

  /** Whether a placeholder of this provider stands at `target` now. */
  holds(target: string): boolean {
    return this.users.has(target)
  }
}

function isFileName(target: string): boolean {
  return path.extname(target) !== ''
}
