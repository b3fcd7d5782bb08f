import { describe, expect, it } from 'vitest'
import { type Context, ProviderService, sharedMap } from '../src/index.ts'
import { rootPerTest } from './root.ts'

declare module '../src/index.ts' {
  interface Context {
    greeter: Greeter
  }
}

abstract class Greeter extends ProviderService {
  constructor(ctx: Context) {
    super(ctx, 'greeter')
  }
  abstract homeContext(): Context
}

let constructedWith: Context | undefined

class LocalGreeter extends Greeter {
  constructor(ctx: Context) {
    super(ctx)
    constructedWith = ctx
  }
  homeContext(): Context {
    return this.home
  }
}

const t = rootPerTest()

describe('ProviderService', () => {
  it('registers under its name and keeps the context it was mounted on as home', async () => {
    await t.root.plugin(LocalGreeter)
    expect(t.root.greeter).toBeInstanceOf(LocalGreeter)
    expect(constructedWith).toBeDefined()
    expect(t.root.greeter.homeContext()).toBe(constructedWith)
  })
})

describe('sharedMap', () => {
  it('creates the map on first use and returns the same one after', () => {
    const state = new Map<string, unknown>()
    const first = sharedMap<string, number>(state, 'cursors')
    first.set('job-1', 4)
    expect(sharedMap<string, number>(state, 'cursors').get('job-1')).toBe(4)
    expect(state.get('cursors')).toBe(first)
  })

  it('replaces a value of another type under the key', () => {
    const state = new Map<string, unknown>([['cursors', 'not a map']])
    const map = sharedMap<string, number>(state, 'cursors')
    expect(map.size).toBe(0)
    expect(state.get('cursors')).toBe(map)
  })
})
