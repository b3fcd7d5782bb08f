import { open, stat } from 'node:fs/promises'
import type { Context } from '@dsh/cordis'
import type { WriteResult } from './seam.ts'

/** A client's file methods (an editor's), when it offers them, for the sessions it drives. */
export interface ClientFiles {
  /** The client offers to read text files and drives this session. */
  canRead(sessionId: string | undefined): boolean
  canWrite(sessionId: string | undefined): boolean
  read(sessionId: string, path: string): Promise<string>
  write(sessionId: string, path: string, content: string): Promise<void>
}

const SNIFF_BYTES = 8192
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** The first bytes of a file; empty when it cannot be read (then the client answers). */
async function head(file: string): Promise<Buffer> {
  let handle: Awaited<ReturnType<typeof open>> | undefined
  try {
    handle = await open(file, 'r')
    const sample = Buffer.alloc(SNIFF_BYTES)
    const { bytesRead } = await handle.read(sample, 0, SNIFF_BYTES, 0)
    return sample.subarray(0, bytesRead)
  } catch {
    return Buffer.alloc(0)
  } finally {
    await handle?.close().catch(() => {})
  }
}

/** Whether the file on disk starts with bytes that are not UTF-8 text (images, binaries): those stay on disk. */
async function looksBinary(file: string): Promise<boolean> {
  const sample = await head(file)
  if (sample.includes(0)) return true
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: sample.length === SNIFF_BYTES })
    return false
  } catch {
    return true
  }
}

/**
 * Routes the text file reads and writes of a client's sessions through its
 * own file methods (`fs/read-content`, `fs/write-content`), so the model sees
 * an editor's unsaved buffers and its writes land in the editor (with its
 * undo). Binary files, and the sessions of other surfaces, stay on disk.
 */
export function routeFilesThroughClient(ctx: Context, files: ClientFiles): void {
  ctx.on('fs/read-content', async (request, next) => {
    const { sessionId } = request
    if (!sessionId || !files.canRead(sessionId) || (await looksBinary(request.path.real))) return next()
    return Buffer.from(await files.read(sessionId, request.path.absolute), 'utf8')
  })
  ctx.on('fs/write-content', async (request, next): Promise<WriteResult> => {
    const { sessionId } = request
    if (!sessionId || !files.canWrite(sessionId)) return next()
    let text: string
    try {
      text = strictUtf8.decode(request.data)
    } catch {
      return next()
    }
    const before = await stat(request.path.real).catch(() => undefined)
    await files.write(sessionId, request.path.absolute, text)
    const after = await stat(request.path.real).catch(() => undefined)
    return {
      path: request.path,
      created: before === undefined,
      bytes: request.data.length,
      mtimeMs: after?.mtimeMs ?? Date.now(),
    }
  })
}
