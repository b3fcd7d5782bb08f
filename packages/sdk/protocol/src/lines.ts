const NEWLINE = 0x0a

/**
 * Splits a byte stream into lines (without `\n` or a trailing `\r`). A line
 * longer than `maxBytes` is not kept: `onOversized` is called once its end
 * arrives (or at the end of input) with its length and its first `headBytes`
 * bytes as text, and the rest is dropped as it comes, so a runaway sender
 * cannot make the reader buffer without bound.
 */
export class LineSplitter {
  private parts: Buffer[] = []
  private size = 0
  private oversized = false
  private head = ''

  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOversized: (bytes: number, head: string) => void,
    private readonly headBytes = 4096,
  ) {}

  push(chunk: Buffer | string): void {
    let data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk
    for (;;) {
      const at = data.indexOf(NEWLINE)
      if (at < 0) {
        this.keep(data)
        return
      }
      this.keep(data.subarray(0, at))
      this.finishLine()
      data = data.subarray(at + 1)
    }
  }

  /** The input ended: a last line without a newline still counts. */
  end(): void {
    if (this.size > 0 || this.oversized) this.finishLine()
  }

  private keep(bytes: Buffer): void {
    if (bytes.length === 0) return
    this.size += bytes.length
    if (this.oversized) return
    if (this.size > this.maxBytes) {
      this.oversized = true
      this.head = Buffer.concat([...this.parts, bytes], Math.min(this.size, this.headBytes)).toString('utf8')
      this.parts = []
      return
    }
    this.parts.push(bytes)
  }

  private finishLine(): void {
    const { oversized, size, head } = this
    const text = oversized
      ? ''
      : (this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts, size)).toString('utf8')
    this.parts = []
    this.size = 0
    this.oversized = false
    this.head = ''
    if (oversized) this.onOversized(size, head)
    else this.onLine(text.endsWith('\r') ? text.slice(0, -1) : text)
  }
}
