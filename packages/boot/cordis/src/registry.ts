import type { Context } from 'cordis'

/**
 * A keyed registry whose entries belong to the plugin that registered them.
 * `register` ties the entry to the caller's fiber through `ctx.effect`, so
 * disposing that plugin removes the entry; the returned disposer removes it
 * earlier. Registering a key that is taken is an error naming the key.
 */
export class ScopedRegistry<T> {
  private readonly entries = new Map<string, T>()

  constructor(readonly kind: string) {}

  register(ctx: Context, key: string, value: T): () => void {
    if (this.entries.has(key)) throw new Error(`${this.kind} "${key}" is already registered`)
    const dispose = ctx.effect(() => {
      this.entries.set(key, value)
      return () => {
        if (this.entries.get(key) === value) this.entries.delete(key)
      }
    }, `${this.kind}:${key}`)
    return () => void dispose()
  }

  get(key: string): T | undefined {
    return this.entries.get(key)
  }

  has(key: string): boolean {
    return this.entries.has(key)
  }

  keys(): string[] {
    return [...this.entries.keys()]
  }

  values(): T[] {
    return [...this.entries.values()]
  }

  get size(): number {
    return this.entries.size
  }
}
