import { Transform, type TransformCallback } from 'node:stream'

/** A header section longer than this is not LSP framing. */
const MAX_HEADER_BYTES = 8_192
const HEADER_END = Buffer.from('\r\n\r\n')

/**
 * Passes a server's stdout through unchanged while following its LSP framing
 * (`Content-Length` headers), and fails the stream as soon as one message
 * announces more than `maxBytes`, or a header section never ends. The JSON-RPC
 * reader buffers a whole message before parsing it, so without this a server
 * could make dsh hold any amount of memory.
 */
export class FrameLimit extends Transform {
  /** Bytes of the current message body still to pass; -1 while reading headers. */
  private bodyLeft = -1
  private header = Buffer.alloc(0)

  constructor(private readonly maxBytes: number) {
    super()
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const problem = this.follow(chunk)
    if (problem) done(new Error(problem))
    else done(null, chunk)
  }

  /** Advances through the chunk; a message explaining why the stream is not acceptable LSP, if it is not. */
  private follow(chunk: Buffer): string | undefined {
    let rest = chunk
    while (rest.length > 0) {
      if (this.bodyLeft >= 0) {
        const taken = Math.min(this.bodyLeft, rest.length)
        this.bodyLeft -= taken
        rest = rest.subarray(taken)
        if (this.bodyLeft === 0) this.bodyLeft = -1
        continue
      }
      this.header = Buffer.concat([this.header, rest])
      const end = this.header.indexOf(HEADER_END)
      if (end < 0) {
        if (this.header.length > MAX_HEADER_BYTES) return 'a header section has no end'
        break
      }
      const length = /(?:^|\r\n)content-length:\s*(\d+)/i.exec(this.header.subarray(0, end).toString('latin1'))?.[1]
      const size = length === undefined ? 0 : Number(length)
      if (size > this.maxBytes) {
        return `a message of ${size} bytes is over the limit of ${this.maxBytes} (maxMessageBytes)`
      }
      rest = this.header.subarray(end + HEADER_END.length)
      this.header = Buffer.alloc(0)
      // A header without a length is the JSON-RPC reader's to report.
      this.bodyLeft = size
      if (size === 0) this.bodyLeft = -1
    }
    return undefined
  }
}
