import { readFileSync } from 'node:fs'
import path from 'node:path'

/**
 * Project entries that make something run outside the sandbox later: git
 * hooks and config, dsh's own project config, Claude Code's and Codex's
 * settings and hooks, agent skills and commands, MCP server commands. They
 * stay read-only inside every writable root, whether or not they exist yet.
 */
export const PROTECTED_PROJECT_NAMES = ['.git', '.dsh', '.claude', '.codex', '.agents', '.mcp.json'] as const

/**
 * The protected paths of one writable root: each of `PROTECTED_PROJECT_NAMES`
 * under it and, when `.git` is a file (`gitdir: …`, as in worktrees and
 * submodules), the git dir it names and that git dir's common dir, where
 * hooks and config live.
 */
export function protectedProjectPaths(root: string): string[] {
  const paths: string[] = PROTECTED_PROJECT_NAMES.map((name) => path.join(root, name))
  const gitDir = pointedTo(path.join(root, '.git'), /^gitdir:\s*(.+?)\s*$/m, root)
  if (gitDir) {
    paths.push(gitDir)
    const common = pointedTo(path.join(gitDir, 'commondir'), /^(.+?)\s*$/m, gitDir)
    if (common) paths.push(common)
  }
  return paths
}

/** The path a small text file names (relative to `base`), when the file exists and matches. */
function pointedTo(file: string, pattern: RegExp, base: string): string | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return undefined // missing, or a folder
  }
  const match = pattern.exec(text.slice(0, 4096))
  return match?.[1] ? path.resolve(base, match[1]) : undefined
}
