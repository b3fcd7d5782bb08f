import { existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export interface ProjectFolders {
  /** The nearest folder at or above the workspace holding `.git`; undefined when there is none below the home folder. */
  root: string | undefined
  /** The folders from the outermost searched one down to the workspace. */
  folders: string[]
}

/**
 * Walks up from a session's workspace to its project: the nearest folder with
 * a `.git` entry. Without one the walk ends below the user's home folder (the
 * home folder is searched only when it is the workspace) or at the filesystem
 * root.
 */
export function projectFolders(cwd: string, home = os.homedir()): ProjectFolders {
  const folders: string[] = []
  let dir = path.resolve(cwd)
  for (;;) {
    folders.unshift(dir)
    if (existsSync(path.join(dir, '.git'))) return { root: dir, folders }
    const parent = path.dirname(dir)
    if (parent === dir || parent === home || dir === home) return { root: undefined, folders }
    dir = parent
  }
}
