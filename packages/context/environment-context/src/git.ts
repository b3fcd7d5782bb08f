import { hardenedGit } from '@dsh/hardened-git'

export interface GitSummary {
  branch: string
  /** Porcelain status lines (`XY path`), at most the asked number. */
  entries: string[]
  /** How many entries there were in all. */
  total: number
}

export interface GitOptions {
  timeoutMs: number
  maxEntries: number
}

/**
 * The branch and a short status of the repository holding `cwd`, or
 * undefined outside a repository or when git fails or runs out of time.
 *
 * git runs directly (not as a model command), so a hostile repository's own
 * config must not make it run anything: the fsmonitor hook, hooks, submodule
 * recursion and the clean/smudge filters it defines are switched off, and the
 * index is never written (`@dsh/hardened-git`).
 */
export async function gitSummary(cwd: string, options: GitOptions): Promise<GitSummary | undefined> {
  const out = await hardenedGit(
    cwd,
    [
      'status',
      '--porcelain=v1',
      '-z',
      '--branch',
      '--ignore-submodules=all',
      '--untracked-files=normal',
      '--no-renames',
    ],
    options,
  )
  if (out === undefined) return undefined
  const [head = '', ...lines] = out.split('\0').filter(Boolean)
  const branch = head.startsWith('## ') ? head.slice(3) : head
  return { branch, entries: lines.slice(0, options.maxEntries), total: lines.length }
}
