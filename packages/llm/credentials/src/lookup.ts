import type { Context } from '@dsh/cordis'

/** Secrets and settings by name: the credentials service when there is one, then the environment. */
export interface SecretLookup {
  /** The value, or `undefined` when unset. May throw (an unreadable credentials file). */
  get(name: string): Promise<string | undefined>
  /** Where a user can set `name`, for messages. */
  places(name: string): string
}

/** What `ctx.credentials` offers, as far as a consumer cares; the service is optional. */
interface CredentialSource {
  get(name: string): string | undefined | Promise<string | undefined>
  places?(name: string): string
}

/**
 * Secrets by name for a plugin that calls a provider (a model route, a search
 * API): `ctx.credentials` when it is mounted, then the environment. A
 * separate entry point, so consumers need not load the service's module.
 */
export function credentialLookup(ctx: Context): SecretLookup {
  const credentials = () => ctx.get('credentials') as unknown as CredentialSource | undefined
  return {
    async get(key) {
      const service = credentials()
      const stored = typeof service?.get === 'function' ? await service.get(key) : undefined
      if (typeof stored === 'string' && stored.length > 0) return stored
      const env = process.env[key]
      return env && env.length > 0 ? env : undefined
    },
    places(key) {
      const service = credentials()
      if (typeof service?.places === 'function') return service.places(key)
      return `set ${key} in the environment, in $DSH_HOME/.credentials.yaml, or in $DSH_HOME/.env`
    },
  }
}
