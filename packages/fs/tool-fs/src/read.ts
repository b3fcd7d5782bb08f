import { createHash, type Hash } from 'node:crypto'
import type { Readable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import type { Context } from '@dsh/cordis'
import type { FileStat } from '@dsh/fs'
import {
  type CallArguments,
  defineTool,
  ToolError,
  type ToolOutput,
  type ToolRunContext,
  toolParametersBy,
} from '@dsh/tools'
import { pathTitle } from './presentation.ts'
import { z } from 'zod'
import { Config, type FsToolsConfig } from './config.ts'
import {
  displayPath,
  fileAccess,
  fsOptions,
  MAX_PATH_LENGTH,
  readRecords,
  shownArgument,
  toolErrorOf,
} from './files.ts'
import { type ImageMediaType, imageName, imageType } from './image.ts'

/** How much of the start of a file decides whether it is text, an image or other binary data. */
const SNIFF_BYTES = 8192

/** The lines a read asks for, when it names an offset or a limit: ` (from line 10, 5 lines)`. */
function lineRange(args: CallArguments): string {
  const from = typeof args.offset === 'number' ? args.offset : undefined
  const count = typeof args.limit === 'number' ? args.limit : undefined
  if (from === undefined && count === undefined) return ''
  return ` (from line ${from ?? 1}${count !== undefined ? `, ${count} lines` : ''})`
}

/** The read parameters for a `readLimit`, the most lines one call may ask for. */
const readParameters = toolParametersBy((readLimit: number) =>
  z.object({
    file_path: z
      .string()
      .min(1)
      .max(MAX_PATH_LENGTH)
      .describe('The file to read, absolute or relative to the workspace.'),
    offset: z.number().int().min(1).optional().describe('The first line to show, 1-based. Default 1.'),
    limit: z.number().int().min(1).max(readLimit).optional().describe(`How many lines to show. Default ${readLimit}.`),
  }),
)
readParameters(Config().readLimit)

export function readTool(ctx: Context, config: FsToolsConfig) {
  return defineTool({
    name: 'read',
    presentation: { kind: 'read', view: 'read', title: pathTitle('Read', lineRange) },
    description:
      `Read a file. Text comes back as lines numbered like \`cat -n\` (line number, a tab, the text). ` +
      `Reads up to ${config.readLimit} lines from \`offset\` (1-based, default 1); use offset and limit to page through longer files. ` +
      `Lines longer than ${config.maxLineLength} characters are cut. PNG, JPEG, GIF and WebP images come back as images ` +
      `(up to ${config.maxImageBytes} bytes); other binary files are refused. Relative paths are resolved against the workspace. ` +
      `Read a file before you edit it.`,
    parameters: readParameters(config.readLimit),
    readOnly: true,
    isConcurrencySafe: () => true,
    access: fileAccess('read', 'read'),
    async execute(args, run): Promise<ToolOutput> {
      const { info, stream, shown } = await openFile(ctx, run, args.file_path)
      const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>
      try {
        const head = await sniff(chunks)
        const image = imageType(head.bytes)
        if (image) return await imageOutput(chunks, head, image, info, shown, config.maxImageBytes, 'read')
        if (head.bytes.includes(0)) {
          throw new ToolError(
            'FS_NOT_TEXT',
            `${shown} looks like a binary file (it contains NUL bytes). read shows text files and PNG, JPEG, GIF or WebP images only.`,
          )
        }
        if (!validUtf8(head.bytes, head.done)) {
          throw new ToolError(
            'FS_NOT_TEXT',
            `${shown} is not UTF-8 text (it looks binary or uses another encoding), so read cannot show it.`,
          )
        }

        const offset = args.offset ?? 1
        const limit = args.limit ?? config.readLimit
        const scan = new LineScan({ offset, limit, maxLineLength: config.maxLineLength, maxBytes: config.maxReadBytes })
        for (const chunk of head.chunks) scan.push(chunk)
        if (!head.done) {
          for (let next = await chunks.next(); !next.done; next = await chunks.next()) scan.push(next.value)
        }
        scan.finish()

        readRecords(run.sessionState).set(info.path.real, {
          path: info.path.absolute,
          mtimeMs: info.mtimeMs,
          size: info.size,
          sha256: scan.digest,
        })
        return render(scan, shown, offset, config, info.path.absolute)
      } catch (error) {
        if (error instanceof ToolError) throw error
        throw toolErrorOf(error, shown, run.signal)
      } finally {
        await chunks.return?.()
        stream.destroy()
      }
    },
  })
}

function render(scan: LineScan, shown: string, offset: number, config: FsToolsConfig, path: string): ToolOutput {
  if (scan.total === 0) return { content: `(${shown} is empty.)`, meta: { path, totalLines: 0 } }
  if (offset > scan.total) {
    throw new ToolError(
      'FS_OFFSET_OUT_OF_RANGE',
      `offset ${offset} is past the end of ${shown}, which has ${scan.total} lines.`,
    )
  }
  const first = offset
  const last = offset + scan.lines.length - 1
  let footer = ''
  if (scan.capped)
    footer = `(Output capped at ${config.maxReadBytes} bytes. Showing lines ${first}-${last} of ${scan.total}. Use offset=${last + 1} to continue.)`
  else if (last < scan.total)
    footer = `(Showing lines ${first}-${last} of ${scan.total}. Use offset=${last + 1} to continue.)`
  else if (first > 1) footer = `(End of file: ${scan.total} lines.)`
  const text = scan.lines.join('\n') + (footer ? `\n\n${footer}` : '')
  return { content: text, meta: { path, startLine: first, endLine: last, totalLines: scan.total } }
}

export interface Head {
  chunks: Buffer[]
  bytes: Buffer
  /** The whole file is in `chunks`. */
  done: boolean
}

/** A regular file opened for reading: what `stat` saw, the stream of that same file, and its path as shown to the model. */
export async function openFile(
  ctx: Context,
  run: ToolRunContext,
  filePath: string,
): Promise<{ info: FileStat; stream: Readable; shown: string }> {
  const options = fsOptions(run, filePath)
  let shown = shownArgument(run.cwd, filePath)
  try {
    const info = await ctx.fs.stat(filePath, options)
    shown = displayPath(run.cwd, info.path.absolute)
    if (info.type === 'directory')
      throw new ToolError('FS_IS_DIRECTORY', `${shown} is a directory, not a file. List it with the ls tool instead.`)
    if (info.type !== 'file') throw new ToolError('FS_NOT_REGULAR_FILE', `${shown} is not a regular file.`)
    // The same file the stat saw, or PATH_CHANGED: read records are keyed by that location.
    const stream = await ctx.fs.readStream(filePath, { ...options, expectReal: info.path.real })
    return { info, stream, shown }
  } catch (error) {
    if (error instanceof ToolError) throw error
    throw toolErrorOf(error, shown, run.signal, {
      NOT_FOUND: `file not found: ${shown}. Check the path (relative paths start at ${run.cwd}).`,
      IS_DIRECTORY: `${shown} is a directory, not a file. List it with the ls tool instead.`,
    })
  }
}

/** An image file as a tool result: a line naming it, then the image block (FS_IMAGE_TOO_LARGE past `limit` bytes). */
export async function imageOutput(
  chunks: AsyncIterator<Buffer>,
  head: Head,
  image: ImageMediaType,
  info: FileStat,
  shown: string,
  limit: number,
  tool: string,
): Promise<ToolOutput> {
  if (info.size > limit) {
    throw new ToolError(
      'FS_IMAGE_TOO_LARGE',
      `${shown} is a ${imageName(image)} image of ${info.size} bytes; ${tool} returns images up to ${limit} bytes.`,
    )
  }
  const data = await drain(chunks, head, limit)
  if (!data)
    throw new ToolError(
      'FS_IMAGE_TOO_LARGE',
      `${shown} grew past ${limit} bytes while it was read; ${tool} returns images up to ${limit} bytes.`,
    )
  return {
    content: [
      { type: 'text', text: `${shown}: ${imageName(image)} image, ${data.length} bytes.` },
      { type: 'image', mediaType: image, data: data.toString('base64') },
    ],
    meta: { path: info.path.absolute, mediaType: image, bytes: data.length },
  }
}

/** Reads chunks until at least `SNIFF_BYTES` have arrived (or the file ended). */
export async function sniff(chunks: AsyncIterator<Buffer>): Promise<Head> {
  const taken: Buffer[] = []
  let size = 0
  while (size < SNIFF_BYTES) {
    const next = await chunks.next()
    if (next.done) return { chunks: taken, bytes: Buffer.concat(taken).subarray(0, SNIFF_BYTES), done: true }
    taken.push(next.value)
    size += next.value.length
  }
  return { chunks: taken, bytes: Buffer.concat(taken).subarray(0, SNIFF_BYTES), done: false }
}

/** The rest of the file after the head, or undefined once it passes `limit` bytes. */
async function drain(chunks: AsyncIterator<Buffer>, head: Head, limit: number): Promise<Buffer | undefined> {
  const all = [...head.chunks]
  let size = all.reduce((sum, chunk) => sum + chunk.length, 0)
  if (!head.done) {
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      size += next.value.length
      if (size > limit) return undefined
      all.push(next.value)
    }
  }
  return size > limit ? undefined : Buffer.concat(all, size)
}

/** Whether the first bytes decode as UTF-8; a character cut off at the end of the sample is fine unless the file ends there. */
function validUtf8(bytes: Buffer, whole: boolean): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: !whole })
    return true
  } catch {
    return false
  }
}

interface Window {
  offset: number
  limit: number
  maxLineLength: number
  maxBytes: number
}

/**
 * One pass over the file: numbers the lines of the window, counts all of
 * them, and hashes the content for the session's read record. A line far
 * longer than can be shown is never kept whole in memory.
 */
class LineScan {
  readonly lines: string[] = []
  total = 0
  capped = false
  digest = ''
  private bytes = 0
  private carry = ''
  private carryCut = false
  private readonly hash: Hash = createHash('sha256')
  private readonly decoder = new StringDecoder('utf8')

  constructor(private readonly window: Window) {}

  push(chunk: Buffer): void {
    this.hash.update(chunk)
    this.feed(this.decoder.write(chunk))
  }

  finish(): void {
    this.feed(this.decoder.end())
    if (this.carry !== '' || this.carryCut) this.take(this.carry, this.carryCut)
    this.digest = this.hash.digest('hex')
  }

  private feed(text: string): void {
    let start = 0
    for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n', start)) {
      this.take(this.carry + text.slice(start, newline), this.carryCut)
      this.carry = ''
      this.carryCut = false
      start = newline + 1
    }
    this.carry += text.slice(start)
    if (this.carry.length > this.window.maxLineLength + 1) {
      this.carry = this.carry.slice(0, this.window.maxLineLength + 1)
      this.carryCut = true
    }
  }

  private take(raw: string, cut: boolean): void {
    const window = this.window
    this.total += 1
    if (this.capped || this.total < window.offset || this.lines.length >= window.limit) return
    let text = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (cut || text.length > window.maxLineLength) {
      text = `${text.slice(0, window.maxLineLength)}… [line cut at ${window.maxLineLength} characters]`
    }
    const line = `${String(this.total).padStart(6)}\t${text}`
    const size = Buffer.byteLength(line) + 1
    if (this.lines.length > 0 && this.bytes + size > window.maxBytes) {
      this.capped = true
      return
    }
    this.bytes += size
    this.lines.push(line)
  }
}
