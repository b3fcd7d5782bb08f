import { closeSync, fstatSync, openSync, readSync } from 'node:fs'

/** One instruction file as far as it could be read. */
export type ReadOutcome =
  | { kind: 'missing' }
  | { kind: 'text'; text: string; size: number; shown: number; cut: boolean }
  | { kind: 'unreadable'; why: string; key: string }

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Reads at most `cap` bytes of a text file, cut back to a character boundary.
 * `key` changes when the file does, so a caller can report a problem once.
 */
export function readCapped(file: string, cap: number): ReadOutcome {
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' }
    return { kind: 'unreadable', why: describe(error), key: `${file}:${code ?? 'error'}` }
  }
  try {
    const stat = fstatSync(fd)
    const key = `${file}:${stat.size}:${stat.mtimeMs}`
    if (!stat.isFile()) return { kind: 'unreadable', why: 'it is not a regular file', key }
    const wanted = Math.min(stat.size, cap)
    // One byte past the cap tells whether the cut falls inside a character.
    const buffer = Buffer.alloc(Math.min(stat.size, cap + 1))
    let filled = 0
    while (filled < buffer.length) {
      const got = readSync(fd, buffer, filled, buffer.length - filled, filled)
      if (got === 0) break
      filled += got
    }
    let end = Math.min(filled, wanted)
    const cut = stat.size > end
    if (cut) while (end > 0 && ((buffer[end] as number) & 0xc0) === 0x80) end--
    let text: string
    try {
      text = utf8.decode(buffer.subarray(0, end))
    } catch {
      return { kind: 'unreadable', why: 'it is not valid UTF-8 text', key }
    }
    if (text.includes('\u0000')) return { kind: 'unreadable', why: 'it holds NUL bytes, so it is not text', key }
    return { kind: 'text', text, size: stat.size, shown: end, cut }
  } catch (error) {
    return { kind: 'unreadable', why: describe(error), key: `${file}:error` }
  } finally {
    closeSync(fd)
  }
}

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
