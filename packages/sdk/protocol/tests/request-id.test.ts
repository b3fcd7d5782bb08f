import { describe, expect, it } from 'vitest'
import { peekRequestId } from '../src/index.ts'

describe('peekRequestId', () => {
  it.each([
    ['{"jsonrpc":"2.0","id":7,', 7],
    ['{"jsonrpc":"2.0","id":7,"method":"m","params":{"text":"cut sh', 7],
    ['{ "id" : "req-1" , "method": 42', 'req-1'],
    ['{"id":"a\\"b}","method":"m"}', 'a"b}'],
    ['{"id":-3.5e2}', -350],
    ['{"method":"m","params":{"id":5,"list":[{"id":6}]},"id":9,', 9],
    ['{"method":"has \\"id\\":5 inside","id":"x"}', 'x'],
    ['{"jsonrpc":"2.0","id":7,"method":garbage here', 7],
    ['{"\\u0069d":4,', 4],
  ])('reads the id of %s', (text, id) => {
    expect(peekRequestId(text)).toBe(id)
  })

  it.each([
    ['not json at all'],
    ['[{"id":1}]'],
    ['{"params":{"id":5},"method":"m"'],
    ['{"params":{"id":5}'],
    ['{"method":"id","x":"\\"id\\":3"'],
    ['{"id":12'],
    ['{"id":"unterminated'],
    ['{"id":null,"method":"m"}'],
    ['{"id":true,'],
    ['{"id":{"n":1},'],
    ['{"id":1e999,'],
    ['{"id":1,"id":2,"method":"m"}'],
    ['{"jsonrpc":"2.0","id":4,"result":'],
    ['{"jsonrpc":"2.0","error":{"code":1},"id":4,'],
    ['{"jsonrpc" "2.0","id":7,'],
    ['{"a":tru,"id":7,'],
    ['{}'],
    [''],
  ])('answers null for %s', (text) => {
    expect(peekRequestId(text)).toBeNull()
  })

  it('looks no further than its limit', () => {
    const text = `{"pad":"${'x'.repeat(100)}","id":3}`
    expect(peekRequestId(text)).toBe(3)
    expect(peekRequestId(text, 50)).toBeNull()
  })
})
