import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { isPlainObject, parseYaml } from '@dsh/loader/compose'
import { firstMatch, type PermissionRule, parseRules, type RuleSubject, unknownRules } from '@dsh/permission-rules'
import type { ToolExecution } from '@dsh/tools'
import { accessOf } from './classify.ts'
import { resolveReal } from './paths.ts'

/**
 * The `permission:` section of a settings document: `{allow?: string[], deny?: string[]}`, each rule
 * checked. Throws naming the file and the entry; a missing file or section has no rules.
 */
export function readRuleSection(file: string): { allow: string[]; deny: string[] } {
  if (!existsSync(file)) return { allow: [], deny: [] }
  const doc = parseYaml(readFileSync(file, 'utf8'), file)
  const section = isPlainObject(doc) ? doc.permission : undefined
  if (section === undefined || section === null) return { allow: [], deny: [] }
  if (!isPlainObject(section)) throw new Error(`${file}: "permission" must be a mapping of allow and deny`)
  const out = { allow: [] as string[], deny: [] as string[] }
  for (const [key, value] of Object.entries(section)) {
    if (key !== 'allow' && key !== 'deny')
      throw new Error(`${file}: unknown setting permission.${key} (known: allow, deny)`)
    if (!Array.isArray(value) || value.some((rule) => typeof rule !== 'string'))
      throw new Error(`${file}: permission.${key} must be a list of rules`)
    parseRules(value as string[], `${file}: permission.${key}`)
    out[key] = value as string[]
  }
  return out
}

/** The allow and deny rules of the permission row, parsed once. */
export class PermissionRules {
  readonly allow: PermissionRule[]
  readonly deny: PermissionRule[]
  private readonly reported = new Set<string>()

  /** Throws for a malformed rule, naming the field and the entry (`permission.allow[1]: ...`). */
  constructor(allow: readonly string[], deny: readonly string[]) {
    this.allow = parseRules(allow, 'permission.allow')
    this.deny = parseRules(deny, 'permission.deny')
  }

  get empty(): boolean {
    return this.allow.length === 0 && this.deny.length === 0
  }

  /** The call as the rules see it: its access, and each path it names with where that path really leads. */
  async subject(execution: ToolExecution): Promise<RuleSubject> {
    const access = accessOf(execution)
    const { cwd } = execution.run
    const subject: RuleSubject = { tool: execution.tool.name, access: 'error' in access ? undefined : access, cwd }
    if (!('error' in access) && access.paths?.length && this.hasPatterns()) {
      subject.paths = await Promise.all(
        access.paths.map(async (given) => {
          const lexical = path.resolve(cwd, given)
          const real = await resolveReal(lexical)
          // A symlink loop has no real location: it counts as a form that no pattern matches.
          return real === undefined ? [lexical, '\u0000loop'] : [...new Set([lexical, real])]
        }),
      )
    }
    return subject
  }

  private hasPatterns(): boolean {
    return [...this.allow, ...this.deny].some((rule) => rule.pattern !== undefined)
  }

  denied(subject: RuleSubject): PermissionRule | undefined {
    return firstMatch(this.deny, subject, 'deny')
  }

  allowed(subject: RuleSubject): PermissionRule | undefined {
    return firstMatch(this.allow, subject, 'allow')
  }

  /** The rules that match no known tool or MCP server and were not reported yet (each is reported once). */
  unreported(tools: readonly string[], mcpServers: readonly string[]): PermissionRule[] {
    const fresh = unknownRules([...this.deny, ...this.allow], { tools, mcpServers }).filter(
      (rule) => !this.reported.has(rule.text),
    )
    for (const rule of fresh) this.reported.add(rule.text)
    return fresh
  }
}
