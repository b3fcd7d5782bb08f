import { randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { type FileHandle, open, readFile, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import { pipeline } from 'node:stream'

const NEWLINE = 0x0a

export function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'
}

/** Makes a directory entry change (create, rename, unlink) durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Writes all of `data` through `handle` (appends when it was opened with `a`). */
export async function writeAll(handle: FileHandle, data: Uint8Array): Promise<void> {
  let offset = 0
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset)
    offset += bytesWritten
  }
}

/**
 * Publishes `data` at `file` atomically: a 0600 temp file next to it is
 * written, fsynced and renamed over `file`, then the directory is fsynced.
 */
export async function publishFile(file: string, data: Uint8Array): Promise<void> {
  const temp = `${file}.tmp-${randomBytes(6).toString('hex')}`
  const handle = await open(temp, 'wx', 0o600)
  try {
    await handle.chmod(0o600)
    await writeAll(handle, data)
    await handle.sync()
  } catch (error) {
    await handle.close().catch(() => {})
    await rm(temp, { force: true })
    throw error
  }
  await handle.close()
  try {
    await rename(temp, file)
  } catch (error) {
    await rm(temp, { force: true })
    throw error
  }
  await syncDir(path.dirname(file))
}

/** Whether a directory entry is a temp file of `publishFile`. */
export function isTempName(name: string): boolean {
  return /\.tmp-[0-9a-f]+$/.test(name)
}

/** Where the complete lines of the first `size` bytes end: just past the last newline (0 when there is none). */
export async function completeLength(handle: FileHandle, size: number, chunkSize = 64 * 1024): Promise<number> {
  let end = size
  while (end > 0) {
    const length = Math.min(chunkSize, end)
    const start = end - length
    const buffer = Buffer.alloc(length)
    await readFully(handle, buffer, start)
    const index = buffer.lastIndexOf(NEWLINE)
    if (index >= 0) return start + index + 1
    end = start
  }
  return 0
}

/**
 * The complete lines of the first `end` bytes, last first, with the byte
 * offset each starts at. Reads backwards in chunks, so finding the last
 * record of a long log reads only its tail.
 */
export async function* linesBackward(
  handle: FileHandle,
  end: number,
  chunkSize = 64 * 1024,
): AsyncGenerator<{ text: string; start: number }> {
  let position = end
  let carry = Buffer.alloc(0)
  let size = chunkSize
  while (position > 0) {
    const length = Math.min(size, position)
    position -= length
    const buffer = Buffer.alloc(length)
    await readFully(handle, buffer, position)
    const data = carry.length ? Buffer.concat([buffer, carry]) : buffer
    let stop = data.length
    while (stop > 0) {
      const index = data.lastIndexOf(NEWLINE, stop - 1)
      if (index < 0) break
      if (stop > index + 1) yield { text: data.toString('utf8', index + 1, stop), start: position + index + 1 }
      stop = index
    }
    carry = Buffer.from(data.subarray(0, stop))
    // A very long line: read bigger chunks so it is not copied over and over.
    if (stop === data.length) size *= 2
  }
  if (carry.length) yield { text: carry.toString('utf8'), start: 0 }
}

async function readFully(handle: FileHandle, buffer: Buffer, position: number): Promise<void> {
  let offset = 0
  while (offset < buffer.length) {
    const { bytesRead } = await handle.read(buffer, offset, buffer.length - offset, position + offset)
    if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${position + offset}`)
    offset += bytesRead
  }
}

/** Sealed files up to this size are decompressed whole to find their first line: far cheaper than a decompression stream. */
const WHOLE_DECOMPRESS_BYTES = 256 * 1024

/**
 * The first line of a plain or zstd-compressed file, without its newline;
 * `undefined` when the file holds no newline within `limit` bytes. Only as
 * much of the file is read (and decompressed) as it takes to find it, except
 * that a small compressed file (`size` known and at most 256 KiB) is
 * decompressed whole.
 */
export async function readFirstLine(
  file: string,
  compressed: boolean,
  limit = 1024 * 1024,
  size?: number,
): Promise<string | undefined> {
  if (compressed && size !== undefined && size <= WHOLE_DECOMPRESS_BYTES) {
    const data = (await zstd()).decompress(await readFile(file))
    const index = data.indexOf(NEWLINE)
    return index >= 0 && index <= limit ? data.toString('utf8', 0, index) : undefined
  }
  const source = createReadStream(file, { highWaterMark: 16 * 1024 })
  const stream = compressed ? pipeline(source, new (await zstd()).DecompressStream(), () => {}) : source
  const chunks: Buffer[] = []
  let length = 0
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const index = chunk.indexOf(NEWLINE)
      if (index >= 0) {
        chunks.push(chunk.subarray(0, index))
        return Buffer.concat(chunks).toString('utf8')
      }
      chunks.push(chunk)
      length += chunk.length
      if (length > limit) return undefined
    }
    return undefined
  } finally {
    source.destroy()
    stream.destroy()
  }
}

/** zstd-napi is a native module: loaded on first use, so runs that never touch a sealed log skip it. */
export function zstd(): Promise<typeof import('zstd-napi')> {
  return import('zstd-napi')
}
