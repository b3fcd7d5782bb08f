import os from 'node:os'
import path from 'node:path'
import { release, walk } from './walk.ts'

/** One entry of the deny list: where it came from, and its path split into segments (`*` in a segment matches within it). */
export interface DenyRule {
  /** `secretFiles` (dsh's own secret store) or `denyRead` (the user's list). */
  source: 'secretFiles' | 'denyRead'
  /** The entry as configured. */
  entry: string
  /** Absolute patterns the entry stands for: as written, and with the symlinks of its existing part resolved. */
  patterns: string[]
}

/** Why a configured entry is unusable; the message names the field, the index and the value. */
export class DenyListError extends Error {
  override name = 'DenyListError'
}

/** `~/x` and absolute paths; anything else is refused, naming the field and the entry. */
export function expandEntry(field: string, index: number, entry: unknown): string {
  if (typeof entry !== 'string' || entry.trim() === '') {
    throw new DenyListError(`fs config ${field}[${index}] must be a non-empty path, got ${JSON.stringify(entry)}`)
  }
  if (entry.includes('\0')) throw new DenyListError(`fs config ${field}[${index}] contains a NUL byte`)
  if (entry === '~' || entry.startsWith('~/')) return path.join(os.homedir(), entry.slice(1))
  if (!path.isAbsolute(entry)) {
    throw new DenyListError(
      `fs config ${field}[${index}] is ${JSON.stringify(entry)}: give an absolute path or one starting with ~/`,
    )
  }
  return path.normalize(entry)
}

/** The pattern with its literal leading part made real (symlinks resolved), so it matches canonical paths. */
function canonical(pattern: string): string {
  const segments = pattern.split('/').filter(Boolean)
  const wild = segments.findIndex((segment) => segment.includes('*'))
  const literal = `/${(wild === -1 ? segments : segments.slice(0, wild)).join('/')}`
  let real = literal
  try {
    const walked = walk(literal)
    real = walked.real
    release(walked)
  } catch {
    // An entry that cannot be resolved still matches as written.
  }
  return wild === -1 ? real : path.join(real, ...segments.slice(wild))
}

export function denyRules(source: DenyRule['source'], entries: readonly unknown[] | undefined): DenyRule[] {
  return (entries ?? []).map((entry, index) => {
    const expanded = expandEntry(source, index, entry)
    const patterns = [...new Set([expanded, canonical(expanded)])]
    return { source, entry: entry as string, patterns }
  })
}

function segmentMatches(pattern: string, segment: string): boolean {
  if (!pattern.includes('*')) return pattern === segment
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]*')
  return new RegExp(`^${source}$`).test(segment)
}

/** `real` is the pattern's path or lies below it. */
export function matchesPattern(pattern: string, real: string): boolean {
  const want = pattern.split('/').filter(Boolean)
  const have = real.split('/').filter(Boolean)
  if (have.length < want.length) return false
  return want.every((segment, i) => segmentMatches(segment, have[i] as string))
}

/**
 * The parts of deny patterns that reach below folder `root` (canonical), as
 * segments relative to it (`*` within a segment), for a tool that walks the
 * folder itself and must leave them out.
 */
export function patternsBelow(rules: readonly DenyRule[], root: string): string[][] {
  const base = root.split('/').filter(Boolean)
  const out: string[][] = []
  for (const pattern of new Set(rules.flatMap((rule) => rule.patterns))) {
    const want = pattern.split('/').filter(Boolean)
    if (want.length <= base.length) continue
    if (base.every((segment, i) => segmentMatches(want[i] as string, segment))) out.push(want.slice(base.length))
  }
  return out
}

/** The rule a canonical path falls under, if any. */
export function deniedBy(rules: readonly DenyRule[], real: string): DenyRule | undefined {
  return rules.find((rule) => rule.patterns.some((pattern) => matchesPattern(pattern, real)))
}

/** The refusal the model reads. */
export function denialReason(rule: DenyRule, real: string): string {
  if (rule.source === 'secretFiles') {
    return `${real} is dsh's own secret store (API keys and credentials); tools can never read, list or change it. Do not try another way to reach it`
  }
  return `${real} is on the deny-read list (${rule.entry}); tools can never read, list or change it`
}
