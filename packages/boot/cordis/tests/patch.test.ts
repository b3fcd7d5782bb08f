import { describe, expect, it } from 'vitest'
import { type Context, Service } from '../src/index.ts'
import { rootPerTest, withService } from './root.ts'

// The dsh patch of cordis (patches/cordis@4.0.0-rc.10.patch) builds the "without inject" error only when it is
// thrown. These pin what a plugin author still sees: the same messages, with a stack that starts at their code.

const t = rootPerTest()

class Welcomer extends Service {
  constructor(ctx: Context) {
    super(ctx, 'welcomer')
  }
  greet(name: string): string {
    return `hello ${name}`
  }
}

declare module '../src/index.ts' {
  interface Context {
    welcomer: Welcomer
  }
}

function readWelcomerWithoutInject(ctx: Context): unknown {
  return ctx.welcomer
}

describe('reading a service through a context (patched cordis)', () => {
  it('gives the service to a plugin that injects it, and mixins still work', async () => {
    await t.root.plugin(Welcomer)
    let said = ''
    await withService(t.root, 'welcomer', (ctx) => {
      said = ctx.welcomer.greet('you')
      ctx.on('custom/event' as never, () => {})
    })
    expect(said).toBe('hello you')
  })

  it('throws the same message as before, with a stack that starts at the reading code', async () => {
    await t.root.plugin(Welcomer)
    let caught: unknown
    await t.root.plugin({
      name: 'forgetful',
      apply: (ctx: Context) => {
        try {
          readWelcomerWithoutInject(ctx)
        } catch (error) {
          caught = error
        }
      },
    })
    expect(caught).toBeInstanceOf(Error)
    const error = caught as Error
    expect(error.message).toBe('cannot get property "welcomer" without inject')
    const frames = (error.stack ?? '').split('\n')
    expect(frames[0]).toBe('Error: cannot get property "welcomer" without inject')
    expect(frames[1]).toContain('readWelcomerWithoutInject')
  })

  // Some runtimes install an Error.prepareStackTrace that formats Error objects only (the startup snapshot has one).
  const errorsOnly = (error: Error, frames: NodeJS.CallSite[]) =>
    error instanceof Error
      ? [`${error.name}: ${error.message}`, ...frames.map((f) => `    at ${f}`)].join('\n')
      : undefined
  it.each([
    ['the default stack format', undefined],
    ['a stack formatter that takes only Error objects', errorsOnly],
  ])(
    'still joins the stack of an error a plugin throws to the stack of the code that mounted it (%s)',
    async (_, format) => {
      const original = Error.prepareStackTrace
      if (format) Error.prepareStackTrace = format as typeof Error.prepareStackTrace
      try {
        function throwInside(): never {
          throw new Error('boom')
        }
        function mountFromHere(ctx: Context) {
          return ctx.plugin({ name: 'bad', apply: () => throwInside() })
        }
        const error = await Promise.resolve(mountFromHere(t.root)).then(
          () => undefined,
          (reason: unknown) => reason as Error,
        )
        const frames = (error?.stack ?? '').split('\n')
        expect(frames[0]).toBe('Error: boom')
        expect(frames[1]).toContain('throwInside')
        expect(frames.findIndex((line) => line.includes('mountFromHere'))).toBeGreaterThan(1)
      } finally {
        Error.prepareStackTrace = original
      }
    },
  )
})

/** Errors the tree logs (cordis logs what an effect's disposer throws), as Error objects. */
function loggedErrors(ctx: Context): Error[] {
  const errors: Error[] = []
  ctx.logger.exporter({
    export(message: { args: unknown[] }) {
      for (const arg of message.args) if (arg instanceof Error) errors.push(arg)
    },
  } as never)
  return errors
}

describe('cheaper reads and effects (patched cordis)', () => {
  it('hands out one traceable per context and service, whose methods still see the calling context', async () => {
    class Caller extends Service {
      constructor(ctx: Context) {
        super(ctx, 'caller')
      }
      whoCalls(): unknown {
        return this.ctx
      }
    }
    await t.root.plugin(Caller)
    let first: unknown
    let second: unknown
    let seen: unknown
    let self: Context | undefined
    await withService(t.root, 'caller', (ctx) => {
      self = ctx
      first = (ctx as unknown as { caller: Caller }).caller
      second = (ctx as unknown as { caller: Caller }).caller
      seen = (ctx as unknown as { caller: Caller }).caller.whoCalls()
    })
    expect(first).toBe(second)
    expect(seen).toBe(self)
  })

  it('still shows every read to an internal/get listener, and none when there is no listener', async () => {
    await t.root.plugin(Welcomer)
    const reads: string[] = []
    let said = ''
    await withService(t.root, 'welcomer', (ctx) => {
      said = ctx.welcomer.greet('a')
      const watch = (_: Context, prop: string, _e: unknown, next: () => unknown) => {
        reads.push(prop)
        return next()
      }
      ctx.on('internal/get' as never, watch as never)
      said += ctx.welcomer.greet('b')
    })
    expect(said).toBe('hello ahello b')
    expect(reads).toEqual(['welcomer'])
  })

  it('treats numeric, underscored and reserved names as plain properties, not services', () => {
    const ctx = t.root as unknown as Record<string, unknown>
    // A context is not a promise: awaiting one must not look for a "then" service.
    expect(ctx.then).toBeUndefined()
    expect(ctx['0']).toBeUndefined()
    expect(ctx._nothing).toBeUndefined()
  })

  it('joins the stack of an error an async plugin throws before its first await', async () => {
    function throwEarly(): never {
      throw new Error('early')
    }
    function mountAsyncFromHere(ctx: Context) {
      return ctx.plugin({
        name: 'bad-async',
        apply: async () => {
          throwEarly()
          await Promise.resolve()
        },
      })
    }
    const errors = loggedErrors(t.root)
    await Promise.resolve(mountAsyncFromHere(t.root)).then(
      () => undefined,
      (reason: unknown) => errors.push(reason as Error),
    )
    const error = errors.find((e) => e.message === 'early')
    const frames = (error?.stack ?? '').split('\n')
    expect(frames[1]).toContain('throwEarly')
    expect(frames.findIndex((line) => line.includes('mountAsyncFromHere'))).toBeGreaterThan(1)
  })

  it("logs the error an effect's cleanup throws when its plugin stops, with the stack of the cleanup", async () => {
    function failingCleanup(): never {
      throw new Error('cleanup failed')
    }
    function makeEffectHere(ctx: Context) {
      ctx.effect(() => () => failingCleanup(), 'failing cleanup')
    }
    const errors = loggedErrors(t.root)
    const provider = t.root.plugin({
      name: 'provider',
      apply: (ctx: Context) => ctx.provide('needed' as never, {} as never),
    })
    t.root.plugin({ name: 'with-cleanup', inject: ['needed'], apply: (ctx: Context) => makeEffectHere(ctx) })
    await provider
    await new Promise((resolve) => setTimeout(resolve, 10))
    // The service goes away, so the plugin that needs it stops: its cleanup runs (and throws) then.
    await provider.dispose()
    await new Promise((resolve) => setTimeout(resolve, 10))
    const error = errors.find((e) => e.message === 'cleanup failed')
    const frames = (error?.stack ?? '').split('\n')
    expect(frames[1]).toContain('failingCleanup')
  })

  it('starts and stops the dependents of each service a plugin provides as it comes and goes', async () => {
    const log: string[] = []
    const provider = t.root.plugin({
      name: 'two-services',
      apply: (ctx: Context) => {
        ctx.provide('first' as never, { n: 1 } as never)
        ctx.provide('second' as never, { n: 2 } as never)
      },
    })
    for (const name of ['first', 'second']) {
      t.root.plugin({
        name: `needs-${name}`,
        inject: [name],
        apply: (ctx: Context) => {
          log.push(`start ${name}`)
          ctx.effect(() => () => void log.push(`stop ${name}`))
        },
      })
    }
    await provider
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(log.sort()).toEqual(['start first', 'start second'])
    await provider.dispose()
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(log.filter((l) => l.startsWith('stop')).sort()).toEqual(['stop first', 'stop second'])
  })
})
