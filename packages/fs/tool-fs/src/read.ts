import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { StringDecoder } from 'node:string_decoder'
import { defineTool, ToolError, type ToolOutput } from '@dsh/tools'
import { z } from 'zod'
import { displayPath, fsError, identity, readRecords, resolvePath, statOrUndefined } from './files.ts'
import type { FsToolsConfig } from './config.ts'

const SNIFF_BYTES = 8192

export function readTool(config: FsToolsConfig) {
  return defineTool({
    name: 'read',
    description:
      `Read a text file. Returns its lines numbered like \`cat -n\` (line number, a tab, the text). ` +
      `Reads up to ${config.readLimit} lines from \`offset\` (1-based, default 1); use offset and limit to page through longer files. ` +
      `Lines longer than ${config.maxLineLength} characters are cut. Relative paths are resolved against the workspace. ` +
      `Read a file before you edit it.`,
    parameters: z.object({
      path: z.string().min(1).describe('The file to read, absolute or relative to the workspace.'),
      offset: z.number().int().min(1).optional().describe('The first line to show, 1-based. Default 1.'),
      limit: z.number().int().min(1).max(config.readLimit).optional().describe(`How many lines to show. Default ${config.readLimit}.`),
    }),
    readOnly: true,
    isConcurrencySafe: () => true,
    async execute(args, run): Promise<ToolOutput> {
      const target = resolvePath(run.cwd, args.path)
      const shown = displayPath(run.cwd, target)
      const info = await statOrUndefined(target, shown)
      if (!info) throw new ToolError('FS_NOT_FOUND', `file not found: ${shown}. Check the path (relative paths start at ${run.cwd}).`)
      if (info.isDirectory()) throw new ToolError('FS_IS_DIRECTORY', `${shown} is a directory, not a file. List it with bash (ls) instead.`)
      if (!info.isFile()) throw new ToolError('FS_NOT_REGULAR_FILE', `${shown} is not a regular file.`)
      if (await looksBinary(target, shown)) {
        throw new ToolError('FS_NOT_TEXT', `${shown} looks like a binary file (it contains NUL bytes); read only shows text files.`)
      }

      const offset = args.offset ?? 1
      const limit = args.limit ?? config.readLimit
      const scan = await scanLines(target, shown, run.signal, { offset, limit, maxLineLength: config.maxLineLength, maxBytes: config.maxReadBytes })

      readRecords(run.sessionState).set(await identity(target), {
        path: target,
        mtimeMs: info.mtimeMs,
        size: info.size,
        sha256: scan.sha256,
      })

      if (scan.total === 0) return { content: `(${shown} is empty.)`, meta: { path: target, totalLines: 0 } }
      if (offset > scan.total) {
        throw new ToolError('FS_OFFSET_OUT_OF_RANGE', `offset ${offset} is past the end of ${shown}, which has ${scan.total} lines.`)
      }
      const first = offset
      const last = offset + scan.lines.length - 1
      let footer = ''
      if (scan.capped) footer = `(Output capped at ${config.maxReadBytes} bytes. Showing lines ${first}-${last} of ${scan.total}. Use offset=${last + 1} to continue.)`
      else if (last < scan.total) footer = `(Showing lines ${first}-${last} of ${scan.total}. Use offset=${last + 1} to continue.)`
      else if (first > 1) footer = `(End of file: ${scan.total} lines.)`
      const text = scan.lines.join('\n') + (footer ? `\n\n${footer}` : '')
      return { content: text, meta: { path: target, startLine: first, endLine: last, totalLines: scan.total } }
    },
  })
}

async function looksBinary(target: string, shown: string): Promise<boolean> {
  let handle
  try {
    handle = await open(target, 'r')
    const buffer = Buffer.alloc(SNIFF_BYTES)
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0)
    return buffer.subarray(0, bytesRead).includes(0)
  } catch (error) {
    throw fsError(error, shown)
  } finally {
    await handle?.close()
  }
}

interface Scan {
  lines: string[]
  total: number
  capped: boolean
  sha256: string
}

/**
 * Streams the file once: numbers the lines of the window, counts all of
 * them, and hashes the content for the session's read record.
 */
async function scanLines(
  target: string,
  shown: string,
  signal: AbortSignal,
  window: { offset: number; limit: number; maxLineLength: number; maxBytes: number },
): Promise<Scan> {
  const hash = createHash('sha256')
  const decoder = new StringDecoder('utf8')
  const lines: string[] = []
  let total = 0
  let bytes = 0
  let capped = false
  let carry = ''
  let carryCut = false

  const take = (raw: string, cut: boolean) => {
    total += 1
    if (capped || total < window.offset || lines.length >= window.limit) return
    let text = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (cut || text.length > window.maxLineLength) {
      text = `${text.slice(0, window.maxLineLength)}… [line cut at ${window.maxLineLength} characters]`
    }
    const line = `${String(total).padStart(6)}\t${text}`
    const size = Buffer.byteLength(line) + 1
    if (lines.length > 0 && bytes + size > window.maxBytes) {
      capped = true
      return
    }
    bytes += size
    lines.push(line)
  }
  const feed = (text: string) => {
    let start = 0
    for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n', start)) {
      take(carry + text.slice(start, newline), carryCut)
      carry = ''
      carryCut = false
      start = newline + 1
    }
    carry += text.slice(start)
    // A line far longer than can be shown is not kept whole in memory.
    if (carry.length > window.maxLineLength + 1) {
      carry = carry.slice(0, window.maxLineLength + 1)
      carryCut = true
    }
  }

  try {
    for await (const chunk of createReadStream(target, { signal })) {
      const buffer = chunk as Buffer
      hash.update(buffer)
      feed(decoder.write(buffer))
    }
  } catch (error) {
    if (signal.aborted) throw error
    throw fsError(error, shown)
  }
  feed(decoder.end())
  if (carry !== '' || carryCut) take(carry, carryCut)
  return { lines, total, capped, sha256: hash.digest('hex') }
}
