import { describe, expect, it } from 'vitest'
import { adoptFrozenJson, frozenJsonCopy } from '../src/json.ts'

describe('frozenJsonCopy', () => {
  it('copies plain data deeply, freezes every level and leaves out undefined keys', () => {
    const shared = { n: 1 }
    const value = { a: [1, 'two', true, null, { b: shared }], c: { d: shared, e: undefined } }
    const copy = frozenJsonCopy(value)
    expect(copy).toEqual({ a: [1, 'two', true, null, { b: { n: 1 } }], c: { d: { n: 1 } } })
    expect('e' in copy.c).toBe(false)
    expect(copy).not.toBe(value)
    expect(copy.a[4]).not.toBe(value.a[4])
    for (const part of [copy, copy.a, copy.a[4], copy.c, copy.c.d]) expect(Object.isFrozen(part)).toBe(true)
    expect(Object.isFrozen(value)).toBe(false)
  })

  it.each([
    [{ a: [0, { b: Number.NaN }] }, 'event 7.a[1].b is NaN, which JSON cannot carry'],
    [{ a: { b: -0 } }, 'event 7.a.b is 0, which JSON cannot carry'],
    [{ run: () => 1 }, 'event 7.run is a function, which JSON cannot carry'],
    // biome-ignore lint/suspicious/noSparseArray: the hole is what this case checks
    [{ list: [1, , 3] }, 'event 7.list[1] is a hole in a sparse array'],
    [{ when: new Date(0) }, 'event 7.when is a Date instance, not plain data'],
    [{ big: 1n }, 'event 7.big is a bigint, which JSON cannot carry'],
  ])('names the path of what JSON cannot carry (case %#)', (value, message) => {
    expect(() => frozenJsonCopy(value, 'event 7')).toThrow(new TypeError(message))
  })

  it('refuses a cycle, naming where it closes', () => {
    const loop: Record<string, unknown> = { items: [] }
    ;(loop.items as unknown[]).push({ back: loop })
    expect(() => frozenJsonCopy(loop)).toThrow(new TypeError('data.items[0].back refers back to itself'))
  })
})

describe('adoptFrozenJson', () => {
  it('freezes handed-over data in place, without copying, and drops undefined keys', () => {
    const value = JSON.parse('{"a":[1,{"b":2}],"c":{"d":"x"}}')
    value.c.gone = undefined
    const adopted = adoptFrozenJson(value)
    expect(adopted).toBe(value)
    expect(adopted.a[1]).toBe(value.a[1])
    expect(adopted).toEqual({ a: [1, { b: 2 }], c: { d: 'x' } })
    expect('gone' in adopted.c).toBe(false)
    for (const part of [adopted, adopted.a, adopted.a[1], adopted.c]) expect(Object.isFrozen(part)).toBe(true)
  })

  it('checks what it adopts as frozenJsonCopy does', () => {
    expect(() => adoptFrozenJson(JSON.parse('{"a":{"b":-0}}'), 'event 3')).toThrow(
      new TypeError('event 3.a.b is 0, which JSON cannot carry'),
    )
    expect(() => adoptFrozenJson({ a: [new Map()] }, 'event 3')).toThrow(
      new TypeError('event 3.a[0] is a Map instance, not plain data'),
    )
    expect(() => adoptFrozenJson(Object.freeze({ a: undefined }), 'event 3')).toThrow(
      new TypeError('event 3.a is undefined, which JSON cannot carry'),
    )
  })
})
