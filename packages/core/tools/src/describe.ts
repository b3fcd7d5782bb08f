import path from 'node:path'

export type CallArguments = Record<string, unknown>

/** A call's arguments as the model sent them (a JSON string), parsed; undefined unless they are a JSON object. */
export function parseCallArguments(raw: string): CallArguments | undefined {
  try {
    const value: unknown = JSON.parse(raw || '{}')
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as CallArguments) : undefined
  } catch {
    return undefined
  }
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value : undefined)

/** The path argument of a call (`path`, else `file_path`), if any. */
export function callTarget(args: CallArguments): string | undefined {
  return text(args.path) ?? text(args.file_path)
}

/** A path as the user reads it: relative inside `cwd`, absolute outside. */
export function shownPath(cwd: string, given: string): string {
  const absolute = path.resolve(cwd, given)
  const relative = path.relative(cwd, absolute)
  if (relative === '') return '.'
  return relative.startsWith('..') || path.isAbsolute(relative) ? absolute : relative
}

function oneLine(value: string): string {
  const line = value.replace(/\s*\n\s*/g, ' ').trim()
  return line.length > 200 ? `${line.slice(0, 199)}…` : line
}

/**
 * One line saying what a tool call does, for people watching a session:
 * "Read src/a.ts", "Search "todo" in src", "`npm test`". Paths show relative
 * to `cwd` when inside it. Unparsable arguments give the tool's name.
 */
export function describeToolCall(name: string, args: CallArguments | undefined, cwd: string): string {
  if (!args) return name
  const target = callTarget(args)
  const where = target ? shownPath(cwd, target) : undefined
  switch (name) {
    case 'read': {
      const from = typeof args.offset === 'number' ? args.offset : undefined
      const count = typeof args.limit === 'number' ? args.limit : undefined
      const range = from !== undefined || count !== undefined ? ` (from line ${from ?? 1}${count !== undefined ? `, ${count} lines` : ''})` : ''
      return where ? `Read ${where}${range}` : 'Read'
    }
    case 'write':
      return where ? `Write ${where}` : 'Write'
    case 'edit':
      return where ? `Edit ${where}` : 'Edit'
    case 'ls':
      return `List ${where ?? '.'}`
    case 'glob':
      return `Find ${text(args.pattern) ?? ''}${where ? ` in ${where}` : ''}`.trim()
    case 'grep':
      return `Search ${JSON.stringify(text(args.pattern) ?? '')}${where ? ` in ${where}` : ''}`
    case 'bash':
      return text(args.command) ? `\`${oneLine(args.command as string)}\`` : 'Run a command'
    case 'todo_write':
      return 'Update the todo list'
    default: {
      const mcp = /^mcp__(.+?)__(.+)$/.exec(name)
      if (mcp) return `${mcp[2]} (${mcp[1]})`
      const about = text(args.description) ?? where
      return about ? `${name}: ${oneLine(about)}` : name
    }
  }
}
