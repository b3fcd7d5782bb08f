/**
 * The tail of a byte stream, at most `max` bytes, addressed by absolute
 * offsets: offset 0 is the first byte ever written, `end` is one past the
 * last. Older bytes are dropped and counted.
 */
export class OutputRing {
  private chunks: Buffer[] = []
  private size = 0
  private written = 0

  constructor(private readonly max: number) {}

  /** One past the last byte ever written. */
  get end(): number {
    return this.written
  }

  /** The offset of the oldest byte still kept. */
  get start(): number {
    return this.written - this.size
  }

  /** How many bytes were dropped to stay within the bound. */
  get dropped(): number {
    return this.start
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return
    this.written += chunk.length
    if (chunk.length >= this.max) {
      this.chunks = [chunk.subarray(chunk.length - this.max)]
      this.size = this.max
      return
    }
    this.chunks.push(chunk)
    this.size += chunk.length
    while (this.size > this.max) {
      const first = this.chunks[0] as Buffer
      const excess = this.size - this.max
      if (first.length <= excess) {
        this.chunks.shift()
        this.size -= first.length
      } else {
        this.chunks[0] = first.subarray(excess)
        this.size -= excess
      }
    }
  }

  /**
   * The kept bytes from `since` on. `from` is where they start: later than
   * `since` when the bytes in between were dropped.
   */
  read(since: number): { bytes: Buffer; from: number } {
    const from = Math.min(Math.max(since, this.start), this.end)
    const all = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks)
    return { bytes: all.subarray(from - this.start), from }
  }
}

/** How many leading bytes of `bytes` are UTF-8 continuation bytes (the rest of a character cut off in front). */
export function leadingContinuation(bytes: Buffer): number {
  let count = 0
  while (count < bytes.length && count < 3 && ((bytes[count] as number) & 0xc0) === 0x80) count += 1
  return count
}

/** How many trailing bytes of `bytes` start a UTF-8 character that is not complete yet. */
export function incompleteTail(bytes: Buffer): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back] as number
    if ((byte & 0xc0) === 0x80) continue // continuation: keep looking for the lead byte
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return need > back ? back : 0
  }
  return 0
}
