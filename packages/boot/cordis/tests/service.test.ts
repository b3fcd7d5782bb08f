import { describe, expect, it } from 'vitest'
import { type Context, Service } from '../src/index.ts'
import { rootPerTest, withService } from './root.ts'

const t = rootPerTest()

class Counter extends Service {
  private readonly home: Context
  private count = 0
  constructor(ctx: Context) {
    super(ctx, 'counter')
    this.home = ctx
  }
  bump(): number {
    return this.step()
  }
  private step(): number {
    this.count += 1
    return this.count
  }
  /** The context a caller sees as `this.ctx`, and the service's own. */
  contexts(): { caller: unknown; own: Context } {
    return { caller: this.ctx, own: this.home }
  }
}

declare module '../src/index.ts' {
  interface Context {
    counter: Counter
  }
}

describe("dsh's Service", () => {
  it('keeps its own state across calls from plugins, and this.ctx still answers the calling context', async () => {
    await t.root.plugin(Counter)
    const seen: number[] = []
    let contexts: { caller: unknown; own: Context } | undefined
    let callerCtx: Context | undefined
    await withService(t.root, 'counter', (ctx) => {
      callerCtx = ctx
      seen.push(ctx.counter.bump(), ctx.counter.bump())
      contexts = ctx.counter.contexts()
    })
    seen.push(t.root.counter.bump())
    expect(seen).toEqual([1, 2, 3])
    expect(contexts?.caller).toBe(callerCtx)
    expect(contexts?.own).not.toBe(callerCtx)
  })
})
