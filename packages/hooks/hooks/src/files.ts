import { readFileSync } from 'node:fs'
import { errorMessage } from '@dsh/tools'

/** The hook events dsh runs. Both Claude Code and Codex name them so. */
export const HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'UserPromptSubmit', 'Stop', 'SessionStart'] as const
export type HookEventName = (typeof HOOK_EVENTS)[number]

/** One command of a hooks file, with the matcher of its group. */
export interface HookCommand {
  event: HookEventName
  matcher: string | undefined
  command: string
  /** Seconds, as the file gives it. */
  timeoutSec: number | undefined
  /** The file it came from. */
  file: string
}

export interface ParsedHooksFile {
  commands: HookCommand[]
  /** Entries dsh does not run (another hook type, an event it does not have), each said in a line. */
  skipped: string[]
}

/**
 * Reads the `hooks` of a Claude Code settings file or a Codex `hooks.json`
 * (both `{ "hooks": { Event: [ { matcher?, hooks: [ { type: "command", command, timeout? } ] } ] } }`).
 * Undefined when the file does not exist; throws naming the file and the entry for a malformed one.
 */
export function readHooksFile(file: string): ParsedHooksFile | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    throw new Error(`${file} cannot be read: ${errorMessage(error)}`)
  }
  // An empty file (e.g. the mount point the sandbox leaves for a protected path) holds no hooks.
  if (!text.trim()) return { commands: [], skipped: [] }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    throw new Error(`${file} is not JSON: ${errorMessage(error)}`)
  }
  if (!isObject(parsed)) throw new Error(`${file} must hold a JSON object`)
  const hooks = parsed.hooks
  const commands: HookCommand[] = []
  const skipped: string[] = []
  if (hooks === undefined) return { commands, skipped }
  if (!isObject(hooks)) throw new Error(`${file}: "hooks" must be an object of events`)
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) throw new Error(`${file}: hooks.${event} must be a list of { matcher?, hooks: [...] }`)
    const known = (HOOK_EVENTS as readonly string[]).includes(event)
    if (!known) {
      skipped.push(`${file}: hooks.${event} is not run by dsh (it runs ${HOOK_EVENTS.join(', ')})`)
      continue
    }
    groups.forEach((group: unknown, index) => {
      const where = `${file}: hooks.${event}[${index}]`
      if (!isObject(group) || !Array.isArray(group.hooks))
        throw new Error(`${where} must be { matcher?, hooks: [...] }`)
      if (group.matcher !== undefined && typeof group.matcher !== 'string')
        throw new Error(`${where}.matcher must be a string`)
      group.hooks.forEach((hook: unknown, at) => {
        const place = `${where}.hooks[${at}]`
        if (!isObject(hook)) throw new Error(`${place} must be an object`)
        if ((hook.type ?? 'command') !== 'command') {
          skipped.push(`${place}: type ${JSON.stringify(hook.type)} is not run by dsh (only "command" is)`)
          return
        }
        if (typeof hook.command !== 'string' || !hook.command.trim()) throw new Error(`${place}.command is missing`)
        if (hook.timeout !== undefined && (typeof hook.timeout !== 'number' || !(hook.timeout > 0)))
          throw new Error(`${place}.timeout must be a positive number of seconds`)
        commands.push({
          event: event as HookEventName,
          matcher: group.matcher as string | undefined,
          command: hook.command,
          timeoutSec: hook.timeout as number | undefined,
          file,
        })
      })
    })
  }
  return { commands, skipped }
}

/**
 * Whether a group's matcher selects a tool known by any of `names`: no
 * matcher, `""` and `"*"` select every tool; otherwise the matcher is a
 * regular expression that must match a whole name (so `Bash` is exact and
 * `Edit|Write` or `mcp__.*` select several). A matcher that is not a valid
 * expression is compared as plain text.
 */
export function matches(matcher: string | undefined, names: readonly string[]): boolean {
  if (matcher === undefined || matcher === '' || matcher === '*') return true
  let pattern: RegExp
  try {
    pattern = new RegExp(`^(?:${matcher})$`)
  } catch {
    return names.includes(matcher)
  }
  return names.some((name) => pattern.test(name))
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}
