import type { Context } from 'cordis'
import { Service } from './service.ts'

/**
 * The base of a service seam (`ctx.jobs`, `ctx.shell`, ...): a provider
 * extends it and reaches the context it was mounted on as `home` (`this.ctx`
 * answers the caller's context).
 */
export abstract class ProviderService extends Service {
  protected readonly home: Context

  constructor(ctx: Context, name: string) {
    super(ctx, name)
    this.home = ctx
  }
}

/** A seam's base class, bound to its name: constructed with the context alone. */
export type NamedProviderService = abstract new (ctx: Context) => ProviderService

/**
 * The base class of the seam named `name`: `class Jobs extends providerService('jobs')`
 * registers `ctx.jobs` when a provider is constructed.
 */
export function providerService(name: string): NamedProviderService {
  abstract class Named extends ProviderService {
    constructor(ctx: Context) {
      super(ctx, name)
    }
  }
  return Named
}

/** The map kept under `key` in a shared state map (a session's `sessionState`), made empty on first use. */
export function sharedMap<K, V>(state: Map<string, unknown>, key: string): Map<K, V> {
  const found = state.get(key)
  if (found instanceof Map) return found as Map<K, V>
  const made = new Map<K, V>()
  state.set(key, made)
  return made
}
