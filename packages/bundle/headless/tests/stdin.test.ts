import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { joinTask, readTaskInput } from '../src/stdin.ts'

const stream = (...chunks: Buffer[]) => Readable.from(chunks)

describe('readTaskInput', () => {
  it('joins the chunks as UTF-8 text without trailing whitespace', async () => {
    const text = Buffer.from('résumé: ünïcode ✓\n\n')
    expect(await readTaskInput(stream(text.subarray(0, 2), text.subarray(2)))).toBe('résumé: ünïcode ✓')
  })

  it('refuses bytes that are not UTF-8, naming standard input', async () => {
    await expect(readTaskInput(stream(Buffer.from([0x66, 0xff, 0x66])))).rejects.toThrow(
      'standard input is not UTF-8 text',
    )
  })

  it('stops at the limit and says what to do instead', async () => {
    await expect(readTaskInput(stream(Buffer.from('12345'), Buffer.from('678')), 6)).rejects.toThrow(
      'standard input holds more than 6 bytes; save it to a file in the workspace and name the file in the task',
    )
    expect(await readTaskInput(stream(Buffer.from('123456')), 6)).toBe('123456')
  })
})

describe('joinTask', () => {
  it('puts a blank line between the words and the input, and drops an empty part', () => {
    expect(joinTask('review this', 'diff')).toBe('review this\n\ndiff')
    expect(joinTask('', 'only input')).toBe('only input')
    expect(joinTask('only words', '')).toBe('only words')
  })
})
