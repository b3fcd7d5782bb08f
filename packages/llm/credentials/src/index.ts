import { existsSync, readFileSync, statSync } from 'node:fs'
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parseEnv } from 'node:util'
import { type Context, Schema, Service, stringList } from '@dsh/cordis'
import { parseYaml, stringifyYaml } from '@dsh/loader/compose'

declare module '@dsh/cordis' {
  interface Context {
    credentials: Credentials
  }
}

export interface CredentialsConfig {
  /** The credentials document, `$DSH_HOME/.credentials.yaml`. */
  file: string
  /** A dotenv file read last, `$DSH_HOME/.env`. */
  envFile: string
  /**
   * The launch directory's dotenv file (`./.env`), read right after the
   * environment. It comes with the workspace, so names in `plain` (base URLs)
   * are not taken from it: a cloned repository cannot send the user's key elsewhere.
   */
  projectEnvFile?: string
  /** Names whose values are settings, not secrets (base URLs): `secrets()` leaves them out. */
  plain?: string[]
}

/** A loaded credential: its name and value. */
export interface Secret {
  name: string
  value: string
}

export type CredentialSource = 'env' | 'project-env-file' | 'file' | 'env-file'

/**
 * Parses dotenv text with Node's own parser (`node:util` `parseEnv`): `#`
 * comments, `export`, single, double and backtick quotes, double-quoted
 * `\n` escapes and quoted values over several lines.
 */
export function parseDotenv(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(parseEnv(text))) if (value !== undefined) out[name] = value
  return out
}

/**
 * `ctx.credentials`: secrets by name (e.g. DEEPSEEK_API_KEY), looked up in
 * the process environment, then the launch directory's `.env`, then
 * `.credentials.yaml` (must be 0600), then the home `.env`. Read at each lookup, so an edit works without a restart.
 * Values are never copied into process.env.
 */
export class Credentials extends Service {
  private readonly config: CredentialsConfig
  /** Names found in the environment by a lookup: their values count as loaded. */
  private readonly fromEnv = new Set<string>()
  /** The files' entries as last read for `secrets()`, and what the files looked like then. */
  private cached: { stamp: string; entries: Secret[] } | undefined
  private stampThisTick: string | undefined
  private readonly logger: ReturnType<Context['logger']>

  constructor(ctx: Context, config: CredentialsConfig) {
    super(ctx, 'credentials')
    this.config = config
    this.logger = ctx.logger('credentials')
    this.readFile()
  }

  /**
   * Every credential loaded: each entry of the credentials document and of the
   * home `.env`, and the environment's value of each name a lookup found
   * there; names in `plain` are left out. Files are re-read only when they
   * changed (size and mtime). Never throws: an unreadable file is logged and
   * its entries are missing until it is fixed.
   */
  secrets(): Secret[] {
    const stamp = this.filesStamp()
    if (this.cached?.stamp !== stamp) {
      const entries: Secret[] = []
      try {
        for (const [name, value] of Object.entries(this.readProjectEnv())) entries.push({ name, value })
        for (const [name, value] of Object.entries(this.readFile())) entries.push({ name, value })
        if (existsSync(this.config.envFile)) {
          for (const [name, value] of Object.entries(parseDotenv(readFileSync(this.config.envFile, 'utf8'))))
            entries.push({ name, value: value.trim() })
        }
      } catch (error) {
        this.logger.warn(
          'credentials cannot be read for redaction: %s',
          error instanceof Error ? error.message : String(error),
        )
      }
      this.cached = { stamp, entries }
    }
    const out = [...this.cached.entries]
    for (const name of this.fromEnv) {
      const value = process.env[name]?.trim()
      if (value) out.push({ name, value })
    }
    const plain = new Set(this.config.plain ?? [])
    return out.filter((secret) => secret.value && !plain.has(secret.name))
  }

  /**
   * Size and mtime of each file, looked at once per tick: the events a step
   * appends together share one look, and a change made before the next tick
   * is seen by it.
   */
  private filesStamp(): string {
    if (this.stampThisTick !== undefined) return this.stampThisTick
    const stamp = [this.config.file, this.config.envFile, this.config.projectEnvFile ?? '']
      .map((file) => {
        const info = file ? statSync(file, { throwIfNoEntry: false }) : undefined
        return info ? `${info.size}:${info.mtimeMs}` : '-'
      })
      .join('|')
    this.stampThisTick = stamp
    queueMicrotask(() => {
      this.stampThisTick = undefined
    })
    return stamp
  }

  get(name: string): string | undefined {
    return this.lookup(name)?.value
  }

  lookup(name: string): { value: string; source: CredentialSource } | undefined {
    const fromEnv = process.env[name]
    if (fromEnv?.trim()) {
      this.fromEnv.add(name)
      return { value: fromEnv.trim(), source: 'env' }
    }
    const fromProject = this.readProjectEnv()[name]
    if (fromProject) return { value: fromProject, source: 'project-env-file' }
    const fromFile = this.readFile()[name]
    if (fromFile) return { value: fromFile, source: 'file' }
    if (existsSync(this.config.envFile)) {
      const fromDotenv = parseDotenv(readFileSync(this.config.envFile, 'utf8'))[name]?.trim()
      if (fromDotenv) return { value: fromDotenv, source: 'env-file' }
    }
    return undefined
  }

  /** Where a key can be set, for error messages. */
  places(name: string): string {
    const project = this.config.projectEnvFile ? `, in ${this.config.projectEnvFile}` : ''
    return `set ${name} in the environment${project}, in ${this.config.file} (refs: { ${name}: ... }), or in ${this.config.envFile}`
  }

  /** Stores a secret in the credentials file (0600, written atomically). */
  async set(name: string, value: string): Promise<void> {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new Error(`credential name "${name}" must look like an environment variable name`)
    const refs = { ...this.readFile(), [name]: value }
    const dir = path.dirname(this.config.file)
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const temp = `${this.config.file}.${process.pid}.tmp`
    await writeFile(temp, stringifyYaml({ version: 1, refs }), { mode: 0o600 })
    await chmod(temp, 0o600)
    await rename(temp, this.config.file)
    this.stampThisTick = undefined
  }

  /** The launch directory's `.env`, without the `plain` names (settings such as base URLs), trimmed, empty values dropped. */
  private readProjectEnv(): Record<string, string> {
    const file = this.config.projectEnvFile
    if (!file || !existsSync(file)) return {}
    const plain = new Set(this.config.plain ?? [])
    const out: Record<string, string> = {}
    for (const [name, value] of Object.entries(parseDotenv(readFileSync(file, 'utf8')))) {
      if (plain.has(name)) {
        this.logger.warn('%s sets %s, which is only taken from the environment and dsh home: ignored', file, name)
        continue
      }
      if (value.trim()) out[name] = value.trim()
    }
    return out
  }

  private readFile(): Record<string, string> {
    const file = this.config.file
    if (!existsSync(file)) return {}
    if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) {
      throw new Error(`${file} is readable by other users; run: chmod 600 ${file}`)
    }
    const doc = parseYaml(readFileSync(file, 'utf8'), file)
    if (doc === null || doc === undefined) return {}
    const bad = (what: string) => new Error(`${file}: ${what} (expected "version: 1" and "refs: { NAME: value }")`)
    if (typeof doc !== 'object' || Array.isArray(doc)) throw bad('the document must be a mapping')
    const { version, refs, ...rest } = doc as Record<string, unknown>
    const unknown = Object.keys(rest)
    if (unknown.length) throw bad(`unknown key "${unknown[0]}"`)
    if (version !== undefined && version !== 1) throw bad(`unsupported version ${JSON.stringify(version)}`)
    if (refs === undefined || refs === null) return {}
    if (typeof refs !== 'object' || Array.isArray(refs)) throw bad('"refs" must be a mapping')
    const out: Record<string, string> = {}
    for (const [key, value] of Object.entries(refs)) {
      if (typeof value !== 'string' || !value.trim()) throw bad(`refs.${key} must be a non-empty string`)
      out[key] = value.trim()
    }
    return out
  }
}

export const name = 'credentials'
export const Config: Schema<CredentialsConfig> = Schema.object({
  file: Schema.string().required().description('Path of the credentials document (0600).'),
  envFile: Schema.string()
    .required()
    .description('A dotenv file consulted after the environment and the credentials document.'),
  projectEnvFile: Schema.string().description(
    "The launch directory's dotenv file, consulted right after the environment; names in `plain` are not taken from it.",
  ),
  plain: stringList('Names whose values are settings, not secrets (base URLs): not redacted from logs and output.', [
    'DEEPSEEK_BASE_URL',
    'OPENAI_COMPATIBLE_BASE_URL',
  ]),
})

/** Provides `ctx.credentials`. A credentials file with loose permissions or bad content fails the load. */
export function apply(ctx: Context, config: CredentialsConfig) {
  ctx.plugin(Credentials, config)
}
