import path from 'node:path'
import { wildcard } from './rule.ts'

/**
 * Whether a command line is one plain command the shell runs as written:
 * nothing outside single quotes chains, pipes, redirects, substitutes or
 * groups (`;`, `&`, `|`, `<`, `>`, `(`, `)`, `$`, a backquote, a line break),
 * and every quote is closed. Only such a command may be allowed by a rule,
 * so `git status; curl evil` never passes for `git *`.
 */
export function isSimpleCommand(command: string): boolean {
  let quote: "'" | '"' | undefined
  for (let i = 0; i < command.length; i++) {
    const c = command[i] as string
    if (quote === "'") {
      if (c === "'") quote = undefined
      continue
    }
    if (c === '\\') {
      // An escaped line break continues the line; any other escape is one literal character.
      if (command[i + 1] === '\n' || command[i + 1] === '\r' || i + 1 >= command.length) return false
      i++
      continue
    }
    if (quote === '"') {
      if (c === '"') quote = undefined
      else if (c === '$' || c === '`') return false
      continue
    }
    if (c === "'" || c === '"') quote = c
    else if (';&|<>()$`\n\r'.includes(c)) return false
  }
  return quote === undefined
}

/** The words a segment may start with that only run the next word (`env curl x` runs curl). */
const WRAPPERS = new Set(['env', 'command', 'exec', 'nohup', 'time', 'sudo', 'nice', 'builtin', 'then', 'do', 'else'])

/**
 * The simple commands a line may run, for deny rules: the line is cut at
 * every character that can start another command (`;`, `&`, `|`, line
 * breaks, parentheses, `$(`, backquotes, `{`, `}`), also inside quotes, and
 * each piece loses its quotes and backslashes, leading `NAME=value`
 * assignments and wrappers such as `env` or `sudo`. The first word is also
 * tried without its folder (`/usr/bin/curl` as `curl`). Commands built at run
 * time (`sh -c`, `eval`, `$cmd`, scripts) are not seen through.
 */
export function commandSegments(command: string): string[] {
  const out = new Set<string>()
  for (const raw of command.split(/[;&|\n\r()`{}]|\$\(/)) {
    const words = raw
      .replace(/['"\\]/g, '')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
    while (words.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0] as string) || WRAPPERS.has(words[0] as string)))
      words.shift()
    if (!words.length) continue
    out.add(words.join(' '))
    const first = words[0] as string
    if (first.includes('/')) out.add([path.posix.basename(first), ...words.slice(1)].join(' '))
  }
  return [...out]
}

/** One line of words: runs of blanks become one space. */
function normalized(command: string): string {
  return command.trim().replace(/\s+/g, ' ')
}

/** Whether a command matches a rule's pattern (`*` matches anything; a trailing `:*` means the prefix alone or with arguments). */
export function commandPatternMatches(pattern: string, command: string): boolean {
  const text = normalized(command)
  const wanted = normalized(pattern)
  if (wanted.endsWith(':*')) {
    const prefix = wanted.slice(0, -2).trimEnd()
    return text === prefix || text.startsWith(`${prefix} `)
  }
  return wildcard(wanted).test(text)
}
