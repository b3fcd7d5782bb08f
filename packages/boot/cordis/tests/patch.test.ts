import { describe, expect, it } from 'vitest'
import { type Context, Service } from '../src/index.ts'
import { rootPerTest } from './root.ts'

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
    await t.root.plugin({
      name: 'user',
      inject: ['welcomer'],
      apply: (ctx: Context) => {
        said = ctx.welcomer.greet('you')
        ctx.on('custom/event' as never, () => {})
      },
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
