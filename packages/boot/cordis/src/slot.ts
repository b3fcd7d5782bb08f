import type { Context } from 'cordis'

/**
 * Holds at most one value at a time (an approver, an asker), owned by the
 * plugin that set it. `set` ties the value to the caller's fiber through
 * `ctx.effect`, so disposing that plugin clears the slot; the returned
 * disposer clears it earlier. Setting a slot that is taken is an error
 * naming the kind of value.
 */
export class ExclusiveSlot<T> {
  private holder: { value: T } | undefined

  constructor(readonly kind: string) {}

  set(ctx: Context, value: T): () => void {
    const entry = { value }
    const dispose = ctx.effect(() => {
      if (this.holder) throw new Error(`a ${this.kind} is already set; dispose it before setting another`)
      this.holder = entry
      return () => {
        if (this.holder === entry) this.holder = undefined
      }
    }, this.kind)
    return () => void dispose()
  }

  /** The value set now, if any. */
  get current(): T | undefined {
    return this.holder?.value
  }
}
