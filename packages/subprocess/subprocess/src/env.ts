import { Schema, stringList } from '@dsh/cordis'

/**
 * Names that look like credentials, removed from every child's inherited
 * environment unless `ignoreDefaultExcludes` is set. Case-insensitive globs.
 */
export const DEFAULT_SECRET_PATTERNS: readonly string[] = Object.freeze([
  '*KEY*',
  '*SECRET*',
  '*TOKEN*',
  '*PASS*',
  '*_PWD',
  '*AUTH*',
  '*CRED*',
  '*_PAT',
  '*COOKIE*',
  '*PRIVATE*',
  'SSH_AUTH_SOCK',
  'GPG_AGENT_INFO',
])

/**
 * dsh's own variables. They point at harness state (`DSH_HOME` holds the
 * credentials file) or steer dsh itself; no child needs them, so they are
 * removed from the inherited environment whatever the config says.
 */
export const HARNESS_PATTERNS: readonly string[] = Object.freeze(['DSH_*'])

/** What `inherit: core` keeps: the variables programs need to find their tools, home, locale and temp folder. */
export const CORE_PATTERNS: readonly string[] = Object.freeze([
  'HOME',
  'LOGNAME',
  'USER',
  'USERNAME',
  'PATH',
  'SHELL',
  'PWD',
  'TMPDIR',
  'TEMP',
  'TMP',
  'LANG',
  'LANGUAGE',
  'LC_*',
  'TERM',
  'TZ',
])

/** A URL whose userinfo carries a password (`scheme://user:pass@host`, `redis://:pass@host`) anywhere in a value. */
export const URL_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*:[^\s/?#]+@/i

export type EnvironmentInherit = 'all' | 'core' | 'none'

/** How a child's environment is built from dsh's own (like Codex's `shell_environment_policy`). */
export interface EnvironmentPolicyConfig {
  /** Which of dsh's variables a child starts from. */
  inherit: EnvironmentInherit
  /** Keep names matching `DEFAULT_SECRET_PATTERNS` and values carrying a URL password. */
  ignoreDefaultExcludes: boolean
  /** More patterns whose variables are removed. */
  exclude: string[]
  /** When not empty, only inherited variables matching one of these survive. */
  includeOnly: string[]
  /** Set after every filter: these reach the child as given. */
  set: Record<string, string>
}

/** One problem in a policy config: where it is (under the policy) and what is wrong. */
interface PolicyProblem {
  path: (string | number)[]
  message: string
}

const PATTERN = /^[A-Za-z0-9_.*?-]+$/
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** A case-insensitive glob: `*` is any run of characters, `?` one character, the rest literal. */
function compileGlob(pattern: string): RegExp {
  let source = ''
  for (const char of pattern) {
    if (char === '*') source += '.*'
    else if (char === '?') source += '.'
    else source += char.replace(/[.\\^$+()[\]{}|-]/g, '\\$&')
  }
  return new RegExp(`^${source}$`, 'i')
}

/** The first thing wrong with a policy config, or undefined when it is usable. */
function policyProblem(config: EnvironmentPolicyConfig): PolicyProblem | undefined {
  for (const field of ['exclude', 'includeOnly'] as const) {
    const list = config[field]
    for (let i = 0; i < list.length; i++) {
      const pattern = list[i] as string
      if (!PATTERN.test(pattern)) {
        return {
          path: [field, i],
          message: `${JSON.stringify(pattern)} is not a valid pattern: use letters, digits, "_", ".", "-" and the wildcards "*" and "?"`,
        }
      }
    }
  }
  for (const [name, value] of Object.entries(config.set)) {
    if (!NAME.test(name)) {
      return {
        path: ['set', name],
        message: `${JSON.stringify(name)} is not a valid variable name: it must start with a letter or "_" and hold only letters, digits and "_"`,
      }
    }
    if (typeof value !== 'string' || value.includes('\0')) {
      return { path: ['set', name], message: 'the value must be a string without NUL characters' }
    }
  }
  return undefined
}

/** `exclude[1]`, `set.NAME`: where a problem is, as a reader would write it. */
function problemPath(problem: PolicyProblem): string {
  return problem.path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('')
}

function anyOf(patterns: readonly string[]): (name: string) => boolean {
  const compiled = patterns.map(compileGlob)
  return (name) => compiled.some((glob) => glob.test(name))
}

/**
 * A compiled environment policy. `apply(env)` builds a child's environment
 * from `env` (dsh's own): start from `inherit`, drop dsh's own `DSH_*`
 * variables, drop the default secret patterns and URL passwords (unless
 * ignored), drop `exclude`, keep only `includeOnly` (when given), then add
 * `set`.
 */
export class EnvironmentPolicy {
  private readonly inherited: (name: string) => boolean
  private readonly harness = anyOf(HARNESS_PATTERNS)
  private readonly secret: (name: string) => boolean
  private readonly excluded: (name: string) => boolean
  private readonly included: ((name: string) => boolean) | undefined
  private readonly set: Readonly<Record<string, string>>
  private readonly checkValues: boolean

  /** Throws, naming the field and entry, for an invalid pattern or name. */
  constructor(config: EnvironmentPolicyConfig) {
    const problem = policyProblem(config)
    if (problem) throw new Error(`environment policy: ${problemPath(problem)}: ${problem.message}`)
    this.inherited =
      config.inherit === 'all' ? () => true : config.inherit === 'core' ? anyOf(CORE_PATTERNS) : () => false
    this.secret = config.ignoreDefaultExcludes ? () => false : anyOf(DEFAULT_SECRET_PATTERNS)
    this.checkValues = !config.ignoreDefaultExcludes
    this.excluded = anyOf(config.exclude)
    this.included = config.includeOnly.length > 0 ? anyOf(config.includeOnly) : undefined
    this.set = { ...config.set }
  }

  /** Whether the inherited variable `name=value` reaches a child. */
  keeps(name: string, value: string): boolean {
    if (!this.inherited(name) || this.harness(name) || this.secret(name) || this.excluded(name)) return false
    if (this.checkValues && URL_PASSWORD.test(value)) return false
    return this.included ? this.included(name) : true
  }

  /** The environment a child starts with, built from `env` (unset entries are skipped). */
  apply(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [name, value] of Object.entries(env)) {
      if (value !== undefined && this.keeps(name, value)) out[name] = value
    }
    return Object.assign(out, this.set)
  }
}

export const DEFAULT_ENVIRONMENT_POLICY: EnvironmentPolicyConfig = Object.freeze({
  inherit: 'all',
  ignoreDefaultExcludes: false,
  exclude: [],
  includeOnly: [],
  set: {},
}) as EnvironmentPolicyConfig

const defaultPolicy = new EnvironmentPolicy(DEFAULT_ENVIRONMENT_POLICY)

/**
 * `env` under the default policy: without dsh's own variables, names that
 * look like credentials, values carrying a URL password, and unset entries.
 * For processes started outside `ctx.subprocess` where the configured policy
 * is out of reach; prefer `ctx.subprocess.environment()`.
 */
export function scrubEnvironment(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return defaultPolicy.apply(env)
}

/**
 * The `environment` field of the subprocess config. Patterns and names are
 * checked here, so a bad entry fails at load with its path.
 */
export function environmentPolicySchema(field: string): Schema<EnvironmentPolicyConfig> {
  const fields = Schema.object({
    inherit: Schema.union(['all', 'core', 'none'] as const)
      .default('all')
      .description(
        "Which of dsh's variables a child starts from: all, core (HOME, PATH, USER, SHELL, LANG, LC_*, TERM, TMPDIR, ...) or none.",
      ),
    ignoreDefaultExcludes: Schema.boolean()
      .default(false)
      .description(
        'Keep variables whose names look like credentials (*KEY*, *TOKEN*, *PASS*, ...) and values with a URL password.',
      ),
    exclude: stringList('More case-insensitive glob patterns (* and ?) of variables to remove.'),
    includeOnly: stringList('When not empty, only inherited variables matching one of these patterns survive.'),
    set: Schema.dict(Schema.string()).default({}).description('Variables every child gets, set after the filters.'),
  })
  // The callback sees the resolved object, defaults filled in; `preserve` keeps it from also seeing the raw input.
  return Schema.transform(
    fields,
    (resolved) => {
      const config = resolved as EnvironmentPolicyConfig
      const problem = policyProblem(config)
      if (problem) throw new Schema.ValidationError(problem.message, { path: [field, ...problem.path] })
      return config
    },
    true,
  )
    .default({ ...DEFAULT_ENVIRONMENT_POLICY })
    .description('The environment of every spawned process (bash, jobs, terminals, MCP stdio servers).')
}
