import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { readAgentSettings, readSettingsDocument } from '@dsh/agent'
import { type Context, Schema, stringValue } from '@dsh/cordis'
import { type LlmFailure, REASONING_EFFORTS } from '@dsh/llm'
import { isPlainObject, stringifyYaml } from '@dsh/loader/compose'
import { NETWORK_MODES, type NetworkMode, type PermissionPreset, PRESETS, readRuleSection } from '@dsh/permission'
import { parseRules } from '@dsh/permission-rules'
import { textMessage } from '@dsh/session'
import { errorMessage } from '@dsh/tools'
import { ConversationError } from '@dsh/conversations'
import { z } from 'zod'

export const THEMES = ['light', 'dark', 'system'] as const
export type Theme = (typeof THEMES)[number]

/** The `web:` section of settings.yaml: what the browser app keeps. */
export interface WebSettings {
  permissionPreset?: PermissionPreset
  /** The network of sandboxed commands in new web sessions. */
  network?: NetworkMode
  theme?: Theme
}

/** Where keys are stored and how long a connection test may take: config fields of the row that uses the store. */
export interface SettingsConfig {
  apiKeyName: string
  baseUrlName: string
  /** The credentials of the OpenAI-compatible route: its key and its address. */
  compatibleKeyName: string
  compatibleBaseUrlName: string
  testTimeoutMs: number
}

export const SettingsConfig: Schema<SettingsConfig> = Schema.object({
  apiKeyName: stringValue('The credential the settings page stores the API key under.', 'DEEPSEEK_API_KEY'),
  baseUrlName: stringValue('The credential the settings page stores the base URL under.', 'DEEPSEEK_BASE_URL'),
  compatibleKeyName: stringValue(
    "The credential the settings page stores the OpenAI-compatible server's key under.",
    'OPENAI_COMPATIBLE_API_KEY',
  ),
  compatibleBaseUrlName: stringValue(
    "The credential the settings page stores the OpenAI-compatible server's address under.",
    'OPENAI_COMPATIBLE_BASE_URL',
  ),
  testTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('How long the connection test waits for the provider.'),
})

export interface SettingsOptions extends SettingsConfig {
  settingsFile: string
}

/** The per-session choices as a request names them (one definition for the settings and the session routes). */
export const choice = {
  model: z.string().trim().min(1, 'must not be empty').max(200),
  reasoningEffort: z.enum(REASONING_EFFORTS),
  permissionPreset: z.enum(PRESETS as [PermissionPreset, ...PermissionPreset[]]),
  network: z.enum(NETWORK_MODES as [NetworkMode, ...NetworkMode[]]),
}

/** The route the settings page's OpenAI-compatible section configures (`@dsh/llm-pi-ai`). */
export const COMPATIBLE_ROUTE = 'openai-compatible'

const apiKeyField = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(1000)
  .refine((key) => !/\s/.test(key), 'must not contain spaces or line breaks')
const urlField = z
  .string()
  .trim()
  .refine((url) => /^https?:\/\/[^\s]+$/i.test(url) && URL.canParse(url), 'must be an http:// or https:// URL')

/** A change to the settings: every field optional, none other allowed (a surface validates its request with it). */
export const SettingsChange = z
  .object({
    apiKey: apiKeyField,
    baseUrl: urlField,
    compatibleApiKey: apiKeyField,
    compatibleBaseUrl: urlField,
    provider: z.string().trim().min(1, 'must not be empty').max(100),
    allowRules: z.array(z.string().trim().min(1, 'must not be empty').max(1000)).max(500),
    denyRules: z.array(z.string().trim().min(1, 'must not be empty').max(1000)).max(500),
    ...choice,
    theme: z.enum(THEMES),
  })
  .partial()
  .strict()

export type SettingsChange = z.output<typeof SettingsChange>

/** Which route's models to list (`models`); the OpenAI-compatible one by default. */
export const ModelsRequest = z.object({ route: z.string().trim().min(1).max(100).default(COMPATIBLE_ROUTE) }).strict()

/** The settings file cannot be read or written (a surface reports it as its own failure, not as bad input). */
export class SettingsFileError extends Error {
  override name = 'SettingsFileError'
  constructor(file: string, error: unknown) {
    super(`cannot use the settings file ${file}: ${errorMessage(error)}`, { cause: error })
  }
}

const invalid = (field: string, message: string) => new ConversationError('invalid', message, { field })
const noRuntime = () => new ConversationError('unavailable', 'no model runtime is loaded (the llm plugin)')

/** `model` when the provider's catalog offers it (or has no catalog), else an `invalid` error naming `field`. */
export function checkedModel(
  ctx: Context,
  model: string,
  field = 'model',
  provider = ctx.agents.defaults().provider,
): string {
  const offered =
    ctx
      .get('llm')
      ?.models(provider)
      .map((m) => m.id) ?? []
  if (offered.length > 0 && !offered.includes(model)) {
    throw invalid(field, `unknown model ${JSON.stringify(model)}; ${provider} offers ${offered.join(', ')}`)
  }
  return model
}

/**
 * Reads and writes the user's settings: the `agent:` section of
 * settings.yaml (model, effort; `ctx.agents` reads it for new agents), its
 * `web:` section (default permission preset and network, theme), and the provider key
 * and base URL through `ctx.credentials` (0600).
 */
export class SettingsStore {
  constructor(
    private readonly ctx: Context,
    private readonly options: SettingsOptions,
  ) {}

  private readDoc(): Record<string, unknown> {
    try {
      return readSettingsDocument(this.options.settingsFile)
    } catch (error) {
      throw new SettingsFileError(this.options.settingsFile, error)
    }
  }

  /** The `web:` section, ignoring values this version does not know. */
  web(): WebSettings {
    const section = this.readDoc().web
    if (!isPlainObject(section)) return {}
    const out: WebSettings = {}
    if (PRESETS.includes(section.permissionPreset as PermissionPreset))
      out.permissionPreset = section.permissionPreset as PermissionPreset
    if (NETWORK_MODES.includes(section.network as NetworkMode)) out.network = section.network as NetworkMode
    if (THEMES.includes(section.theme as Theme)) out.theme = section.theme as Theme
    return out
  }

  /** `web()`, or no defaults when the settings file cannot be read (the failure is logged as a warning). */
  webOrNone(): WebSettings {
    try {
      return this.web()
    } catch (error) {
      this.ctx.logger('user-settings').warn('%s', errorMessage(error))
      return {}
    }
  }

  private credentials() {
    return this.ctx.get('credentials')
  }

  async read(): Promise<Record<string, unknown>> {
    let defaults: ReturnType<Context['agents']['defaults']>
    try {
      defaults = this.ctx.agents.defaults()
    } catch (error) {
      throw new SettingsFileError(this.options.settingsFile, error)
    }
    const web = this.web()
    const credentials = this.credentials()
    const key = credentials?.lookup(this.options.apiKeyName)
    const baseUrl = credentials?.get(this.options.baseUrlName)
    const compatibleKey = credentials?.lookup(this.options.compatibleKeyName)
    const compatibleBaseUrl = credentials?.get(this.options.compatibleBaseUrlName)
    return {
      provider: defaults.provider,
      routes: this.ctx.get('llm')?.listRoutes() ?? [],
      compatible: {
        ...(compatibleBaseUrl ? { baseUrl: compatibleBaseUrl } : {}),
        hasKey: compatibleKey !== undefined,
        ...(compatibleKey ? { keySource: compatibleKey.source } : {}),
      },
      ...(baseUrl ? { baseUrl } : {}),
      hasKey: key !== undefined,
      ...(key ? { keySource: key.source } : {}),
      model: defaults.model,
      ...(defaults.reasoningEffort ? { reasoningEffort: defaults.reasoningEffort } : {}),
      permissionPreset: web.permissionPreset ?? this.ctx.get('permission')?.preset('') ?? 'workspace-write',
      ...(web.network ? { network: web.network } : {}),
      networks: NETWORK_MODES,
      theme: web.theme ?? 'system',
      rules: {
        config: this.ctx.get('permission')?.ruleTexts('config') ?? { allow: [], deny: [] },
        settings: this.ruleSection(),
      },
    }
  }

  /** Applies a checked change: rules parsed, route and model known, credentials stored, the file replaced atomically. */
  async write(input: SettingsChange): Promise<Record<string, unknown>> {
    for (const field of ['allowRules', 'denyRules'] as const) {
      try {
        parseRules(input[field] ?? [], field)
      } catch (error) {
        throw invalid(field, errorMessage(error))
      }
    }
    if (input.provider !== undefined) this.checkedRoute(input.provider, 'provider')
    if (input.model !== undefined) checkedModel(this.ctx, input.model, 'model', input.provider)
    const stored: [string, string | undefined][] = [
      [this.options.apiKeyName, input.apiKey],
      [this.options.baseUrlName, input.baseUrl],
      [this.options.compatibleKeyName, input.compatibleApiKey],
      [this.options.compatibleBaseUrlName, input.compatibleBaseUrl],
    ]
    if (stored.some(([, value]) => value !== undefined)) {
      const credentials = this.credentials()
      if (!credentials)
        throw new ConversationError(
          'unavailable',
          'the credentials plugin is not loaded, so the key and base URL cannot be stored',
        )
      for (const [name, value] of stored) if (value !== undefined) await credentials.set(name, value)
    }
    const agentFields = { provider: input.provider, model: input.model, reasoningEffort: input.reasoningEffort }
    const webFields = { permissionPreset: input.permissionPreset, network: input.network, theme: input.theme }
    const ruleFields = { allow: input.allowRules, deny: input.denyRules }
    const defined = (o: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))
    const changes = [agentFields, webFields, ruleFields].some((fields) => Object.keys(defined(fields)).length)
    if (changes) {
      const doc = this.readDoc()
      const section = (name: string) => (isPlainObject(doc[name]) ? (doc[name] as Record<string, unknown>) : {})
      if (Object.keys(defined(agentFields)).length) doc.agent = { ...section('agent'), ...defined(agentFields) }
      if (Object.keys(defined(webFields)).length) doc.web = { ...section('web'), ...defined(webFields) }
      if (Object.keys(defined(ruleFields)).length) doc.permission = { ...section('permission'), ...defined(ruleFields) }
      await this.writeDoc(doc)
    }
    return this.read()
  }

  private async writeDoc(doc: Record<string, unknown>): Promise<void> {
    const file = this.options.settingsFile
    const temp = `${file}.${process.pid}.${Date.now()}.tmp`
    try {
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
      await writeFile(temp, stringifyYaml(doc), { mode: 0o600 })
      await chmod(temp, 0o600)
      readAgentSettings(temp)
      readRuleSection(temp)
      await rename(temp, file)
    } catch (error) {
      await rm(temp, { force: true })
      throw new SettingsFileError(file, error)
    }
  }

  /** The rules of the settings file's `permission:` section (the editable ones). */
  private ruleSection(): { allow: string[]; deny: string[] } {
    try {
      return readRuleSection(this.options.settingsFile)
    } catch (error) {
      throw new SettingsFileError(this.options.settingsFile, error)
    }
  }

  private checkedRoute(route: string, field: string): string {
    const routes = this.ctx.get('llm')?.listRoutes() ?? []
    if (!routes.includes(route))
      throw invalid(field, `unknown route ${JSON.stringify(route)}; served: ${routes.join(', ')}`)
    return route
  }

  /** The models a route's server lists (`ctx.llm.discoverModels`), with the saved address and key. */
  async models({ route }: z.output<typeof ModelsRequest>): Promise<Record<string, unknown>> {
    const llm = this.ctx.get('llm')
    if (!llm) throw noRuntime()
    this.checkedRoute(route, 'route')
    try {
      const models = await llm.discoverModels(route, AbortSignal.timeout(this.options.testTimeoutMs))
      return { ok: true, route, models: models.map((model) => model.id) }
    } catch (error) {
      return { ok: false, route, error: { code: 'DISCOVERY', message: errorMessage(error) } }
    }
  }

  /** One tiny model call with the current settings; the provider's failure code when it fails. */
  async test(): Promise<Record<string, unknown>> {
    const llm = this.ctx.get('llm')
    if (!llm) throw noRuntime()
    const { provider, model } = this.ctx.agents.defaults()
    const failed = (failure: Pick<LlmFailure, 'code' | 'message' | 'status'>) => ({
      ok: false,
      error: {
        code: failure.code,
        message: failure.message,
        ...(failure.status !== undefined ? { status: failure.status } : {}),
      },
    })
    const stream = llm.stream({
      provider,
      model,
      messages: [textMessage('user', 'Reply with the single word: ok', { kind: 'user' })],
      maxTokens: 16,
      reasoningEffort: 'off',
      signal: AbortSignal.timeout(this.options.testTimeoutMs),
    })
    for await (const chunk of stream) {
      if (chunk.type !== 'finish') continue
      if (chunk.reason === 'aborted')
        return failed({
          code: 'TIMEOUT',
          message: `the provider did not answer within ${this.options.testTimeoutMs} ms`,
        })
      if (chunk.reason === 'error')
        return failed(chunk.failure ?? { code: 'INTERNAL', message: 'the test call failed without a reason' })
      return { ok: true, model }
    }
    return failed({ code: 'PROTOCOL', message: 'the model stream ended without a finish' })
  }
}
