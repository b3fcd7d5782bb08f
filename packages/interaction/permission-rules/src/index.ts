import { ruleMatches, type RuleSubject } from './match.ts'
import { mcpServerOf, type PermissionRule, parseRule, RuleError, toolMatches } from './rule.ts'

export { commandPatternMatches, commandSegments, isSimpleCommand } from './command.ts'
export { ruleMatches, type RuleSubject } from './match.ts'
export { mcpServerOf, type PermissionRule, parseRule, RuleError, toolMatches } from './rule.ts'

/** Parses a list of rules; an error names where the list came from and the entry (`permission.allow[2]: ...`). */
export function parseRules(texts: readonly string[], where: string): PermissionRule[] {
  return texts.map((text, index) => {
    try {
      return parseRule(text)
    } catch (error) {
      if (error instanceof RuleError) throw new RuleError(`${where}[${index}]: ${error.message}`)
      throw error
    }
  })
}

/** The first rule of the list that covers the call (see `ruleMatches` for how each effect reads it). */
export function firstMatch(
  rules: readonly PermissionRule[],
  subject: RuleSubject,
  effect: 'allow' | 'deny',
): PermissionRule | undefined {
  return rules.find((rule) => ruleMatches(rule, subject, effect))
}

/** What is known to exist: registered tool names and configured MCP server names. */
export interface KnownNames {
  tools: readonly string[]
  mcpServers: readonly string[]
}

/**
 * The rules that can match nothing known: no registered tool has a matching
 * name, and an `mcp__<server>` rule names no configured server (a server that
 * is configured but failed to start still counts as known).
 */
export function unknownRules(rules: readonly PermissionRule[], known: KnownNames): PermissionRule[] {
  return rules.filter((rule) => {
    if (known.tools.some((name) => toolMatches(rule.tool, name))) return false
    const server = mcpServerOf(rule.tool)
    if (server !== undefined) return !known.mcpServers.includes(server)
    if (rule.tool.startsWith('mcp__')) return known.mcpServers.length === 0
    return true
  })
}
