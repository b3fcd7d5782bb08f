/** Keeps the last `max` bytes of a stream and counts what it dropped. */
export class TailBuffer {
  private chunks: Buffer[] = []
  private size = 0
  private total = 0

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length
    this.chunks.push(chunk)
    this.size += chunk.length
    while (this.chunks.length > 1 && this.size - (this.chunks[0] as Buffer).length >= this.max) {
      this.size -= (this.chunks.shift() as Buffer).length
    }
  }

  /** The kept text (never starting inside a UTF-8 character) and how many bytes were dropped before it. */
  read(): { text: string; dropped: number } {
    let bytes = Buffer.concat(this.chunks)
    if (bytes.length > this.max) bytes = bytes.subarray(bytes.length - this.max)
    let start = 0
    if (bytes.length < this.total) while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start += 1
    bytes = bytes.subarray(start)
    return { text: bytes.toString('utf8'), dropped: this.total - bytes.length }
  }
}

/**
 * One output stream of a command: the tail for the result, and (when the
 * full text may be spilled) the first `maxFullBytes` bytes.
 */
export class StreamCapture {
  readonly tail: TailBuffer
  private readonly head: Buffer[] = []
  private headSize = 0
  private lost = 0

  constructor(
    maxTailBytes: number,
    private readonly maxFullBytes: number,
  ) {
    this.tail = new TailBuffer(maxTailBytes)
  }

  push(chunk: Buffer): void {
    this.tail.push(chunk)
    const room = this.maxFullBytes - this.headSize
    if (room >= chunk.length) {
      this.head.push(chunk)
      this.headSize += chunk.length
    } else {
      if (room > 0) {
        this.head.push(chunk.subarray(0, room))
        this.headSize += room
      }
      this.lost += chunk.length - Math.max(room, 0)
    }
  }

  /** The whole stream as text, or its first part and a note when it was longer than `maxFullBytes`. */
  full(): string {
    const text = Buffer.concat(this.head).toString('utf8')
    return this.lost > 0 ? `${text}\n[${this.lost} more bytes were not kept]\n` : text
  }
}
