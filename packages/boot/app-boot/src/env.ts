/**
 * The `DSH_*` variables the shipped bundles read, by meaning. Patch files see
 * this object as `dshEnv` in `!!js` expressions (`model: !!js dshEnv.model`),
 * so each variable's name lives here only. A blank value counts as unset:
 * the row then gets its plugin's `Config` default.
 */
export interface DshEnv {
  /** `DSH_MODEL`: the model new agents use. */
  model: string | undefined
  /** `DSH_PERMISSION_MODE`: the permission preset (`read-only`, `workspace-write`, `danger-full-access`). */
  permissionMode: string | undefined
  /** `DSH_SESSION_TITLES`: `on` or `off`, whether a model call names new sessions. */
  sessionTitles: string | undefined
  /** `DSH_PROVIDER`: the model route new agents use; `openai-compatible` when only `DSH_BASE_URL` is set. */
  provider: string | undefined
  /** `DSH_BASE_URL`: the endpoint of that route (any OpenAI-compatible server when no provider is named). */
  baseURL: string | undefined
  /** `DSH_WEB_SEARCH_PROVIDER`: the provider `web_search` uses (`deepseek`, `exa`, `perplexity`). */
  webSearchProvider: string | undefined
}

export function readDshEnv(env: NodeJS.ProcessEnv = process.env): DshEnv {
  const value = (name: string) => env[name]?.trim() || undefined
  return {
    model: value('DSH_MODEL'),
    permissionMode: value('DSH_PERMISSION_MODE'),
    sessionTitles: value('DSH_SESSION_TITLES'),
    provider: value('DSH_PROVIDER') ?? (value('DSH_BASE_URL') ? 'openai-compatible' : undefined),
    baseURL: value('DSH_BASE_URL'),
    webSearchProvider: value('DSH_WEB_SEARCH_PROVIDER'),
  }
}
