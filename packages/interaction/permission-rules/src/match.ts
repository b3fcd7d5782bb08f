import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import type { ToolAccess } from '@dsh/tools'
import type Picomatch from 'picomatch'
import { commandPatternMatches, commandSegments, isSimpleCommand } from './command.ts'
import { type PermissionRule, toolMatches } from './rule.ts'

/** What a rule is held against: one tool call. */
export interface RuleSubject {
  /** The tool's registered name. */
  tool: string
  /** What the call touches, from the tool's `access(args)`; undefined when it cannot say. */
  access: ToolAccess | undefined
  /** The session's folder: relative path patterns and paths resolve against it. */
  cwd: string
  /**
   * Every form of each path the call names (its absolute written form and
   * where it really leads); absent: the access paths resolved against `cwd`.
   */
  paths?: string[][]
}

/**
 * Whether a rule covers a call. The two effects read a specifier differently,
 * each erring on the safe side:
 *
 * - `allow` needs every URL, every path (in every form) and the whole command
 *   to match, and a command only matches when it is one plain command
 *   (`isSimpleCommand`);
 * - `deny` needs one URL, one form of one path, or one of the simple commands
 *   in the line (`commandSegments`) to match.
 *
 * A rule with a specifier never matches a call that has nothing of that sort
 * to show (a `domain:` rule and a call without URLs, a pattern and a call with
 * neither a command nor paths).
 */
export function ruleMatches(rule: PermissionRule, subject: RuleSubject, effect: 'allow' | 'deny'): boolean {
  if (!toolMatches(rule.tool, subject.tool)) return false
  if (rule.domain === undefined && rule.pattern === undefined) return true
  const { access } = subject
  if (!access) return false
  const some = <T>(items: readonly T[], test: (item: T) => boolean) =>
    items.length > 0 && (effect === 'allow' ? items.every(test) : items.some(test))
  if (rule.domain !== undefined) {
    const domain = rule.domain
    return some(access.urls ?? [], (url) => hostMatches(domain, url))
  }
  const pattern = rule.pattern as string
  if (typeof access.command === 'string') {
    const command = access.command
    if (effect === 'allow') return isSimpleCommand(command) && commandPatternMatches(pattern, command)
    return (
      commandPatternMatches(pattern, command) ||
      commandSegments(command).some((segment) => commandPatternMatches(pattern, segment))
    )
  }
  const paths = subject.paths ?? (access.paths ?? []).map((p) => [path.resolve(subject.cwd, p)])
  const matcher = pathMatcher(pattern, subject.cwd)
  return some(paths, (forms) => (effect === 'allow' ? forms.every(matcher) : forms.some(matcher)))
}

function hostMatches(domain: string, url: string): boolean {
  let host: string
  try {
    host = new URL(url.trim()).hostname.toLowerCase().replace(/\.$/, '')
  } catch {
    return false
  }
  if (domain.startsWith('*.')) return host.endsWith(domain.slice(1))
  return host === domain
}

/** A test for absolute paths: the glob as written when absolute (or under `~/`), else relative to `cwd`. */
function pathMatcher(pattern: string, cwd: string): (file: string) => boolean {
  const glob = pattern.startsWith('~/') ? path.join(os.homedir(), pattern.slice(2)) : pattern
  const test = globber()(glob.replace(/^\.\//, ''), { dot: true })
  if (path.isAbsolute(glob)) return (file) => test(file)
  return (file) => {
    const relative = path.relative(cwd, file)
    return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative) && test(relative)
  }
}

let loaded: typeof Picomatch | undefined

/** picomatch, loaded when the first path rule is checked (most sessions have none). */
function globber(): typeof Picomatch {
  loaded ??= createRequire(import.meta.url)('picomatch') as typeof Picomatch
  return loaded
}
