import { describe, expect, it } from 'vitest'
import { type Context, ExclusiveSlot } from '../src/index.ts'
import { rootPerTest } from './root.ts'

const t = rootPerTest()

describe('ExclusiveSlot', () => {
  it('holds one value; a second set throws, naming what is set', () => {
    const slot = new ExclusiveSlot<string>('greeter')
    expect(slot.current).toBeUndefined()
    slot.set(t.root, 'first')
    expect(slot.current).toBe('first')
    expect(() => slot.set(t.root, 'second')).toThrow('a greeter is already set; dispose it before setting another')
    expect(slot.current).toBe('first')
  })

  it('the disposer clears it, and a new value can be set', () => {
    const slot = new ExclusiveSlot<string>('greeter')
    const off = slot.set(t.root, 'first')
    off()
    expect(slot.current).toBeUndefined()
    slot.set(t.root, 'second')
    expect(slot.current).toBe('second')
  })

  it('disposing the plugin that set it clears it', async () => {
    const slot = new ExclusiveSlot<string>('greeter')
    const fiber = t.root.plugin({
      name: 'setter',
      apply(ctx: Context) {
        slot.set(ctx, 'from plugin')
      },
    })
    await fiber
    expect(slot.current).toBe('from plugin')
    await fiber.dispose()
    expect(slot.current).toBeUndefined()
  })

  it('a stale disposer does not clear a later value', () => {
    const slot = new ExclusiveSlot<string>('greeter')
    const off = slot.set(t.root, 'first')
    off()
    slot.set(t.root, 'second')
    off()
    expect(slot.current).toBe('second')
  })
})
