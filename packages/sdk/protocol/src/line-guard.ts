import { peekRequestId, REQUEST_ID_SCAN_CHARS } from './request-id.ts'

const NEWLINE = 0x0a
/** How much of an oversized line is kept to find its request id. */
const HEAD_BYTES = REQUEST_ID_SCAN_CHARS

/**
 * Passes newline-delimited JSON-RPC input through, except a line longer than
 * `limit` bytes: it is dropped as it streams (never held whole) and replaced
 * by a small request of `method` (params `{bytes, limit}`) carrying the
 * dropped line's id when it appears near the start, so a server that answers
 * `method` with an error answers the sender's request and the connection
 * stays up. For JSON-RPC libraries that close the connection on an oversized
 * line (the ACP library does).
 */
export function oversizedLineGuard(limit: number, method: string): TransformStream<Uint8Array, Uint8Array> {
  let parts: Uint8Array[] = []
  let size = 0
  let dropping = false
  let head = ''
  const encoder = new TextEncoder()

  const take = (piece: Uint8Array) => {
    if (!dropping && size + piece.length > limit) {
      dropping = true
      head = new TextDecoder().decode(join([...parts, piece], HEAD_BYTES))
      parts = []
    } else if (!dropping && piece.length > 0) parts.push(piece)
    size += piece.length
  }

  const finishLine = (controller: TransformStreamDefaultController<Uint8Array>) => {
    if (dropping) {
      const request = {
        jsonrpc: '2.0',
        id: peekRequestId(head),
        method,
        params: { bytes: size, limit },
      }
      controller.enqueue(encoder.encode(`${JSON.stringify(request)}\n`))
    } else if (size > 0) {
      controller.enqueue(join([...parts, NEWLINE_BYTES], size + 1))
    }
    parts = []
    size = 0
    dropping = false
    head = ''
  }

  return new TransformStream({
    transform(chunk, controller) {
      let start = 0
      for (;;) {
        const newline = chunk.indexOf(NEWLINE, start)
        take(chunk.subarray(start, newline === -1 ? chunk.length : newline))
        if (newline === -1) return
        finishLine(controller)
        start = newline + 1
      }
    },
    flush(controller) {
      finishLine(controller)
    },
  })
}

const NEWLINE_BYTES = new Uint8Array([NEWLINE])

/** The first `max` bytes of the parts, joined. */
function join(parts: Uint8Array[], max: number): Uint8Array {
  const total = Math.min(
    max,
    parts.reduce((sum, part) => sum + part.length, 0),
  )
  const out = new Uint8Array(total)
  let offset = 0
  for (const part of parts) {
    if (offset >= total) break
    const slice = part.subarray(0, total - offset)
    out.set(slice, offset)
    offset += slice.length
  }
  return out
}
