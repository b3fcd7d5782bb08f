import { stat } from 'node:fs/promises'
import path from 'node:path'
import { hardenedGit } from '@dsh/hardened-git'

/** The files of some extensions that git sees as changed or untracked, each with what identifies its content now. */
export interface ChangeSnapshot {
  /** The repository's top folder: status paths are relative to it. */
  top: string
  /** Absolute path → `XY mtime size` (or `XY gone`). */
  files: Map<string, string>
}

export interface SnapshotOptions {
  timeoutMs: number
  /** The most status output read; a larger status leaves the call unchecked. */
  maxBytes: number
}

/**
 * What `git status` lists under `cwd` for files with these extensions, with
 * each file's modification time and size, so a second snapshot tells which
 * ones a command changed (also a file that was already modified before it).
 * Undefined outside a repository, or when git fails or runs out of time.
 * git runs hardened (`@dsh/hardened-git`): a hostile repository's config runs nothing.
 */
export async function changeSnapshot(
  cwd: string,
  extensions: string[],
  options: SnapshotOptions,
): Promise<ChangeSnapshot | undefined> {
  const top = (await hardenedGit(cwd, ['rev-parse', '--show-toplevel'], options))?.trim()
  if (!top) return undefined
  const pathspecs = extensions.map((extension) => `:(icase)*${extension}`)
  const out = await hardenedGit(
    cwd,
    [
      'status',
      '--porcelain=v1',
      '-z',
      '--ignore-submodules=all',
      '--untracked-files=all',
      '--no-renames',
      '--',
      ...pathspecs,
    ],
    options,
  )
  if (out === undefined) return undefined
  const files = new Map<string, string>()
  await Promise.all(
    out
      .split('\0')
      .filter((entry) => entry.length > 3)
      .map(async (entry) => {
        const file = path.join(top, entry.slice(3))
        const info = await stat(file).catch(() => undefined)
        files.set(file, `${entry.slice(0, 2)} ${info ? `${info.mtimeMs} ${info.size}` : 'gone'}`)
      }),
  )
  return { top, files }
}

/**
 * The files that differ between two snapshots and still exist: listed only
 * after (a clean file the command changed, a new file), listed with another
 * status, time or size, or listed only before (a change the command undid).
 */
export async function changedBetween(before: ChangeSnapshot, after: ChangeSnapshot): Promise<string[]> {
  const candidates = new Set<string>()
  for (const [file, now] of after.files)
    if (before.files.get(file) !== now && !now.endsWith(' gone')) candidates.add(file)
  for (const file of before.files.keys()) if (!after.files.has(file)) candidates.add(file)
  const existing = await Promise.all(
    [...candidates].map(async (file) => ((await stat(file).catch(() => undefined))?.isFile() ? file : undefined)),
  )
  return existing.filter((file) => file !== undefined).sort()
}
