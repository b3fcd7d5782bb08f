const ESC = '\x1b'
const BEL = '\x07'

type State =
  /** Plain text. */
  | 'text'
  /** After ESC. */
  | 'escape'
  /** After ESC followed by an intermediate byte (ESC ( B, ESC # 8): up to the final byte. */
  | 'escape-intermediate'
  /** Inside a control sequence (ESC [ ...): up to the final byte. */
  | 'csi'
  /** Inside a control string (OSC, DCS, SOS, PM, APC): up to BEL or ESC \. */
  | 'string'
  /** After ESC inside a control string. */
  | 'string-escape'

/**
 * Turns terminal output into plain text for the model, one chunk at a time
 * (an escape sequence may be split across chunks): drops escape sequences
 * (CSI, OSC, DCS and the other control strings, two- and three-byte ESC
 * sequences) and control characters except newline and tab. `\r\n` becomes
 * `\n`, and a lone `\r` in the middle of a line (a line redrawn in place,
 * a progress bar) becomes a line break, so each redraw shows as a line of
 * its own.
 */
export class AnsiStripper {
  private state: State = 'text'
  private pendingReturn = false
  /** Nothing has been written on the current line yet. */
  private lineStart = true

  /** The plain text of `chunk`. A trailing `\r` is held back until the next chunk says what it was. */
  push(chunk: string): string {
    let out = ''
    for (const char of chunk) {
      switch (this.state) {
        case 'text':
          out += this.text(char)
          break
        case 'escape':
          this.state = afterEscape(char)
          break
        case 'escape-intermediate':
          // Intermediate bytes 0x20-0x2f continue the sequence; anything else ends it.
          if (!(char >= ' ' && char <= '/')) this.state = 'text'
          break
        case 'csi':
          // Parameter and intermediate bytes are 0x20-0x3f; a final byte 0x40-0x7e ends the sequence.
          if (char >= '@' && char <= '~') this.state = 'text'
          else if (char === ESC) this.state = 'escape'
          else if (char < ' ') this.state = 'text' // malformed: give up on the sequence
          break
        case 'string':
          if (char === BEL || char === '\u009c') this.state = 'text'
          else if (char === ESC) this.state = 'string-escape'
          break
        case 'string-escape':
          // ESC \ is the string terminator; any other ESC starts a new sequence.
          this.state = char === '\\' ? 'text' : afterEscape(char)
          break
      }
    }
    return out
  }

  private text(char: string): string {
    if (char === '\n') {
      this.pendingReturn = false
      this.lineStart = true
      return '\n'
    }
    if (char === '\r') {
      this.pendingReturn = true
      return ''
    }
    // A return at the start of a line moves nothing; elsewhere it starts the line over.
    const prefix = this.pendingReturn && !this.lineStart ? '\n' : ''
    if (char === ESC || char === '\u009b' || char === '\u009d' || char === '\u0090') {
      // An escape sequence does not settle a pending \r: "\r\x1b[K\n" is still one line break.
      if (char === ESC) this.state = 'escape'
      else this.state = char === '\u009b' ? 'csi' : 'string'
      return ''
    }
    const code = char.charCodeAt(0)
    // Other C0 controls, DEL and C1 controls carry nothing readable.
    if (char !== '\t' && (code < 0x20 || code === 0x7f || (code >= 0x80 && code < 0xa0))) return ''
    this.pendingReturn = false
    this.lineStart = false
    return prefix + char
  }
}

function afterEscape(char: string): State {
  if (char === '[') return 'csi'
  if (char === ']' || char === 'P' || char === 'X' || char === '^' || char === '_') return 'string'
  if (char >= ' ' && char <= '/') return 'escape-intermediate'
  if (char === ESC) return 'escape'
  // A two-byte sequence (ESC 7, ESC =, ESC M, ...): the final byte is consumed.
  return 'text'
}

/** Plain text of a complete piece of terminal output (a trailing `\r` is dropped). */
export function stripAnsi(text: string): string {
  return new AnsiStripper().push(text)
}
