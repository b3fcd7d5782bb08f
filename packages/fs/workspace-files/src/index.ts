import type { Dirent } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import path from 'node:path'
import { nullSeparated, runRipgrep } from '@dsh/tool-fs'

const VCS_FOLDERS = ['.git', '.svn', '.hg', '.bzr', '.jj', '.sl']

/** Every file under `cwd` that git would not ignore (bundled ripgrep: .gitignore, .ignore, hidden files listed, VCS folders not). */
export async function listFiles(
  cwd: string,
  options: { maxOutputBytes: number; timeoutMs: number },
): Promise<{ files: string[]; truncated: boolean }> {
  const args = ['--files', '--null', '--hidden', '--no-require-git', ...VCS_FOLDERS.map((f) => `--glob=!${f}`)]
  const outcome = await runRipgrep(args, {
    cwd,
    signal: AbortSignal.timeout(options.timeoutMs),
    maxOutputBytes: options.maxOutputBytes,
  })
  const files = nullSeparated(outcome.stdout, outcome.overflow).map((f) => f.replace(/^\.\//, ''))
  if (outcome.code !== 0 && outcome.code !== 1 && files.length === 0) {
    throw new Error(
      `listing the files of ${cwd} failed: ${outcome.stderr.trim() || `ripgrep exit code ${outcome.code}`}`,
    )
  }
  return { files, truncated: outcome.overflow }
}

/**
 * How well `file` matches `query` (lower is better), or undefined when the
 * query's characters do not appear in order. A match in the file name beats
 * one in the folders; a contiguous match beats a scattered one.
 */
export function matchScore(file: string, query: string): number | undefined {
  const q = query.toLowerCase()
  const lower = file.toLowerCase()
  const base = lower.slice(lower.lastIndexOf('/') + 1)
  if (base.startsWith(q)) return 0 + file.length / 1e4
  if (base.includes(q)) return 1 + file.length / 1e4
  if (lower.includes(q)) return 2 + file.length / 1e4
  let at = 0
  for (const char of q) {
    at = lower.indexOf(char, at)
    if (at < 0) return undefined
    at++
  }
  return 3 + file.length / 1e4
}

/** The files matching `query`, best first, at most `limit`. */
export function rankFiles(files: readonly string[], query: string, limit: number): string[] {
  if (!query) return [...files].sort((a, b) => a.length - b.length || a.localeCompare(b)).slice(0, limit)
  const scored: Array<[number, string]> = []
  for (const file of files) {
    const score = matchScore(file, query)
    if (score !== undefined) scored.push([score, file])
  }
  return scored
    .sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1]))
    .slice(0, limit)
    .map(([, file]) => file)
}

async function isFolder(dir: string, entry: Dirent): Promise<boolean> {
  if (entry.isDirectory()) return true
  if (!entry.isSymbolicLink()) return false
  return (await stat(path.join(dir, entry.name)).catch(() => undefined))?.isDirectory() ?? false
}

/** The sub-folders of `dir` by name, for a workspace picker; a folder that cannot be read throws. */
export async function listDirs(
  dir: string,
  hidden: boolean,
): Promise<{ path: string; parent?: string; dirs: string[] }> {
  const entries = await readdir(dir, { withFileTypes: true })
  const dirs: string[] = []
  for (const entry of entries) {
    if (!hidden && entry.name.startsWith('.')) continue
    if (await isFolder(dir, entry)) dirs.push(entry.name)
  }
  dirs.sort((a, b) => a.localeCompare(b))
  const parent = path.dirname(dir)
  return { path: dir, ...(parent !== dir ? { parent } : {}), dirs }
}

export interface ListingOptions {
  /** How long a listing of a folder is reused. */
  cacheMs: number
  maxOutputBytes: number
  timeoutMs: number
}

/** Workspace listings for @-mentions, each reused for `cacheMs` (a failed one is not kept). */
export class FileListings {
  private readonly listings = new Map<
    string,
    { at: number; listing: Promise<{ files: string[]; truncated: boolean }> }
  >()

  constructor(private readonly options: ListingOptions) {}

  /** The files of `cwd` best matching `query`, at most `limit`, and whether the listing was cut. */
  async find(cwd: string, query: string, limit: number): Promise<{ files: string[]; truncated: boolean }> {
    let cached = this.listings.get(cwd)
    if (!cached || Date.now() - cached.at > this.options.cacheMs) {
      cached = { at: Date.now(), listing: listFiles(cwd, this.options) }
      this.listings.set(cwd, cached)
      cached.listing.catch(() => this.listings.delete(cwd))
    }
    const { files, truncated } = await cached.listing
    return { files: rankFiles(files, query, limit), truncated }
  }
}
