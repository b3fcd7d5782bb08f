import type { Context, Events } from 'cordis'

type Args<K extends keyof Events> = Events[K] extends (...args: infer P) => unknown ? P : never

/**
 * Calls every listener of `name`, even when some throw, and logs each
 * failure instead of passing it on: one bad subscriber never breaks the
 * caller. Listeners start synchronously, in registration order; the promise
 * settles when async listeners finish.
 */
export function emitIsolated<K extends keyof Events & string>(ctx: Context, name: K, ...args: Args<K>): Promise<void> {
  const run = (ctx.parallel as (name: K, ...args: Args<K>) => Promise<void>)(name, ...args)
  return run.catch((error: unknown) => {
    const errors = error instanceof AggregateError ? error.errors : [error]
    for (const e of errors)
      ctx
        .logger('dsh')
        .warn(`a listener of ${name} failed: %s`, e instanceof Error ? (e.stack ?? e.message) : String(e))
  })
}
