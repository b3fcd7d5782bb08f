/** A slice of a buffered stream. */
export interface BufferSlice {
  text: string
  /** The offset just past `text`: pass it as `since` to read what comes next. */
  offset: number
  /** Bytes between the requested offset and the start of `text` that the buffer no longer holds. */
  dropped: number
}

/**
 * The last `capacity` bytes (UTF-8) of a stream of text, addressed by byte
 * offsets from the start of the stream. When the stream outgrows the
 * capacity the oldest bytes are dropped, never leaving half a character at
 * the front.
 */
export class OutputBuffer {
  private chunks: Buffer[] = []
  private size = 0
  private end = 0

  constructor(readonly capacity: number) {
    if (!(Number.isInteger(capacity) && capacity > 0))
      throw new Error(`buffer capacity must be a positive integer, got ${capacity}`)
  }

  /** The offset of the oldest byte still held. */
  get start(): number {
    return this.end - this.size
  }

  /** The offset just past the newest byte: the total number of bytes ever pushed. */
  get offset(): number {
    return this.end
  }

  push(text: string): void {
    if (text === '') return
    const bytes = Buffer.from(text, 'utf8')
    this.chunks.push(bytes)
    this.size += bytes.length
    this.end += bytes.length
    this.trim()
  }

  /**
   * Everything held from `since` on (default: from the oldest byte held).
   * An offset before the oldest byte held reads from there and reports the
   * gap in `dropped`; an offset beyond the end reads nothing.
   */
  read(since = 0): BufferSlice {
    const start = this.start
    const from = Math.min(Math.max(since, start), this.end)
    const dropped = Math.max(0, Math.min(start, this.end) - Math.max(since, 0))
    let skip = from - start
    const parts: Buffer[] = []
    for (const chunk of this.chunks) {
      if (skip >= chunk.length) {
        skip -= chunk.length
        continue
      }
      parts.push(skip > 0 ? chunk.subarray(skip) : chunk)
      skip = 0
    }
    let bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
    // An offset inside a character (only a caller's own arithmetic can produce one) starts at the next character.
    let lead = 0
    while (lead < bytes.length && ((bytes[lead] ?? 0) & 0xc0) === 0x80) lead += 1
    if (lead > 0) bytes = bytes.subarray(lead)
    return { text: bytes.toString('utf8'), offset: this.end, dropped }
  }

  private trim(): void {
    while (this.size > this.capacity) {
      const first = this.chunks[0]!
      const excess = this.size - this.capacity
      if (first.length <= excess) {
        this.chunks.shift()
        this.size -= first.length
        continue
      }
      let cut = excess
      while (cut < first.length && ((first[cut] ?? 0) & 0xc0) === 0x80) cut += 1
      if (cut >= first.length) {
        this.chunks.shift()
        this.size -= first.length
      } else {
        this.chunks[0] = first.subarray(cut)
        this.size -= cut
      }
    }
  }
}
