import { describe, expect, it } from 'vitest'
import { AnsiStripper, OutputBuffer, stripAnsi } from '../src/index.ts'

describe('AnsiStripper', () => {
  it('drops colour, cursor and mode sequences and turns CRLF into LF', () => {
    expect(stripAnsi('\x1b[?2004hbash-5.2$ echo hi\r\n\x1b[?2004l\rhi\r\n')).toBe('bash-5.2$ echo hi\nhi\n')
    expect(stripAnsi('a\x1b[1;31mred\x1b[0m b\x1b[2K\x1b[10;20H')).toBe('ared b')
  })

  it('drops OSC strings ended by BEL or ESC \\ and other control strings', () => {
    expect(stripAnsi('\x1b]0;title\x07one \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1bPdcs data\x1b\\two')).toBe(
      'one link two',
    )
  })

  it('drops two- and three-byte escapes, control characters and DEL, and keeps tabs', () => {
    expect(stripAnsi('\x1b(Ba\x1b7b\x1b8\x07c\x08d\x7f\te')).toBe('abcd\te')
  })

  it('shows a line redrawn in place as separate lines', () => {
    expect(stripAnsi('10%\r20%\r100%\r\n')).toBe('10%\n20%\n100%\n')
    expect(stripAnsi('x\r\r\ny')).toBe('x\ny')
  })

  it('keeps state across chunks, whatever the split', () => {
    const input = 'start \x1b[38;5;196mred\x1b[0m \x1b]0;a title\x1b\\end\r\nnext \u00e9\u4e2d\r\n'
    const whole = stripAnsi(input)
    expect(whole).toBe('start red end\nnext \u00e9\u4e2d\n')
    for (let cut = 1; cut < input.length; cut++) {
      const stripper = new AnsiStripper()
      expect(stripper.push(input.slice(0, cut)) + stripper.push(input.slice(cut))).toBe(whole)
    }
  })
})

describe('OutputBuffer', () => {
  it('keeps the newest bytes and counts what a read missed', () => {
    const buffer = new OutputBuffer(10)
    buffer.push('0123456789')
    buffer.push('abcde')
    expect(buffer.offset).toBe(15)
    expect(buffer.start).toBe(5)
    expect(buffer.read()).toEqual({ text: '56789abcde', offset: 15, dropped: 5 })
    expect(buffer.read(7)).toEqual({ text: '789abcde', offset: 15, dropped: 0 })
    expect(buffer.read(15)).toEqual({ text: '', offset: 15, dropped: 0 })
    expect(buffer.read(99)).toEqual({ text: '', offset: 15, dropped: 0 })
  })

  it('never keeps half a character at the front', () => {
    const buffer = new OutputBuffer(5)
    buffer.push('\u00e9\u00e9\u00e9') // 6 bytes
    const slice = buffer.read()
    expect(slice.text).toBe('\u00e9\u00e9')
    expect(slice.dropped + Buffer.byteLength(slice.text)).toBe(6)
    buffer.push('\u4e2d') // 3 bytes
    expect(buffer.read()).toEqual({ text: '\u00e9\u4e2d', offset: 9, dropped: 4 })
  })
})
