import { describe, expect, it } from 'vitest'
import { Schema, stringList, stringValue } from '../src/index.ts'

describe('schema builders', () => {
  it('stringList fills in its default, keeps a given list and refuses a list with a number in it', () => {
    const config = Schema.object({
      plain: stringList('Plain names.'),
      seeded: stringList('Seeded names.', ['AGENTS.md']),
    })
    expect(config({})).toEqual({ plain: [], seeded: ['AGENTS.md'] })
    expect(config({ plain: ['a', 'b'] })).toEqual({ plain: ['a', 'b'], seeded: ['AGENTS.md'] })
    expect(() => config({ plain: ['a', 1 as unknown as string] })).toThrow()
    expect(config.dict?.plain?.meta.description).toBe('Plain names.')
  })

  it('two configs built from one stringList do not share the default array', () => {
    const config = Schema.object({ names: stringList('Names.') })
    const first = config({})
    first.names.push('changed')
    expect(config({}).names).toEqual([])
  })

  it('stringValue defaults to empty or to the fallback given, and refuses a number', () => {
    const config = Schema.object({ home: stringValue('Home.'), term: stringValue('Terminal.', 'xterm-256color') })
    expect(config({})).toEqual({ home: '', term: 'xterm-256color' })
    expect(config({ home: '/h' })).toEqual({ home: '/h', term: 'xterm-256color' })
    expect(() => config({ home: 3 as unknown as string })).toThrow()
    expect(config.dict?.term?.meta.description).toBe('Terminal.')
  })
})
