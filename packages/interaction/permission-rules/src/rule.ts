/**
 * One allow or deny rule as the user writes it: a tool name (`*` matches any
 * run of characters), optionally followed by a specifier in parentheses:
 *
 * - `bash(npm test*)`: the command line (`*` matches anything, `git:*` is `git`
 *   alone or `git` followed by arguments);
 * - `web_fetch(domain:docs.python.org)`: the host of every URL the call reaches
 *   (`domain:*.python.org` for its subdomains);
 * - `write(src/**)`: every path the call names (a glob, relative to the
 *   session's folder unless it starts with `/` or `~/`);
 * - `mcp__github__*` or `mcp__github`: every tool of the MCP server `github`.
 */
export interface PermissionRule {
  /** The rule as written (trimmed). */
  text: string
  /** The tool name pattern. */
  tool: string
  /** The host pattern of a `domain:` specifier. */
  domain?: string
  /** A command or path pattern, for any other specifier. */
  pattern?: string
}

export class RuleError extends Error {
  override name = 'RuleError'
}

const TOOL_PATTERN = /^[A-Za-z0-9_.*-]+$/
const HOST_PATTERN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/

/** Parses one rule; a malformed rule throws a `RuleError` that quotes it and says what is wrong. */
export function parseRule(written: string): PermissionRule {
  const text = written.trim()
  const fail = (why: string): never => {
    throw new RuleError(`permission rule ${JSON.stringify(written)}: ${why}`)
  }
  if (!text) fail('is empty')
  const open = text.indexOf('(')
  if (open < 0) {
    if (!TOOL_PATTERN.test(text))
      fail('a tool name has only letters, digits, _, -, . and * (e.g. bash or mcp__github__*)')
    return { text, tool: serverWide(text) }
  }
  const tool = text.slice(0, open)
  if (!text.endsWith(')')) fail('the specifier must end with ")" (e.g. bash(npm test*))')
  if (!tool || !TOOL_PATTERN.test(tool)) fail('it must start with a tool name (e.g. bash(npm test*))')
  const specifier = text.slice(open + 1, -1).trim()
  if (!specifier) fail('the specifier in parentheses is empty (write the tool name alone to match every call)')
  if (specifier === '*') return { text, tool: serverWide(tool) }
  if (specifier.startsWith('domain:')) {
    const domain = specifier.slice('domain:'.length).trim().toLowerCase().replace(/\.$/, '')
    if (!HOST_PATTERN.test(domain)) fail('domain: needs a host name such as docs.python.org or *.python.org')
    return { text, tool: serverWide(tool), domain }
  }
  return { text, tool: serverWide(tool), pattern: specifier }
}

/** `mcp__github` alone stands for every tool of that server. */
function serverWide(tool: string): string {
  const server = mcpServerOf(tool)
  return server !== undefined && !tool.slice(5).includes('__') ? `${tool}__*` : tool
}

/** The server a rule's tool pattern names, for `mcp__<server>` and `mcp__<server>__<tool>` (none for a wildcard server). */
export function mcpServerOf(toolPattern: string): string | undefined {
  if (!toolPattern.startsWith('mcp__')) return undefined
  const server = toolPattern.slice(5).split('__')[0] ?? ''
  return server && !server.includes('*') ? server : undefined
}

/** Whether a tool name matches a pattern where `*` stands for any run of characters. */
export function toolMatches(pattern: string, name: string): boolean {
  return wildcard(pattern).test(name)
}

const compiled = new Map<string, RegExp>()

/** A whole-string regular expression for a pattern whose only special character is `*`. */
export function wildcard(pattern: string): RegExp {
  let regex = compiled.get(pattern)
  if (!regex) {
    const body = pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]*')
    regex = new RegExp(`^${body}$`)
    compiled.set(pattern, regex)
  }
  return regex
}
