import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { decompress } from 'zstd-napi'

/**
 * Line 1 of a session log. Only the fields replay reads are named; the rest
 * are kept as they are.
 */
export interface SessionHeader {
  type: 'session'
  format: number
  id: string
  createdAt: number
  cwd: string
  parentSession?: string
  [field: string]: unknown
}

/** One event line. `data` is left loosely typed: replay reads a few fields and keeps the rest. */
export interface LoggedEvent {
  seq: number
  time: number
  type: string
  data: Record<string, unknown>
  ignorable?: true
  replaces?: number[]
  [field: string]: unknown
}

export interface SessionLog {
  header: SessionHeader
  events: LoggedEvent[]
}

/** A log that replay cannot read or cannot turn into mock replies; the message names the line or seq. */
export class ReplayError extends Error {
  override name = 'ReplayError'
}

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd])

/** A JSON object (not an array, not null). */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Parses the text of a session log: a header line, then one event per line. Blank lines are ignored. */
export function parseSessionLog(text: string, source = 'session log'): SessionLog {
  const lines = text.split('\n')
  const parsed: { line: number; value: unknown }[] = []
  lines.forEach((line, index) => {
    if (line.trim() === '') return
    try {
      parsed.push({ line: index + 1, value: JSON.parse(line) })
    } catch (error) {
      throw new ReplayError(`${source}, line ${index + 1}: not JSON (${(error as Error).message})`)
    }
  })
  const [first, ...rest] = parsed
  if (!first) throw new ReplayError(`${source}: empty, no header line`)
  const header = first.value
  if (
    !isObject(header) ||
    header.type !== 'session' ||
    typeof header.id !== 'string' ||
    typeof header.cwd !== 'string'
  ) {
    throw new ReplayError(`${source}, line ${first.line}: not a session header ({type: 'session', id, cwd, ...})`)
  }
  const events = rest.map(({ line, value }) => {
    if (!isObject(value) || typeof value.seq !== 'number' || typeof value.type !== 'string' || !isObject(value.data)) {
      throw new ReplayError(`${source}, line ${line}: not a session event ({seq, time, type, data})`)
    }
    return value as LoggedEvent
  })
  return { header: header as SessionHeader, events }
}

/** The text of a plain or zstd-sealed log file (recognised by its content, not its name). */
export async function readSessionText(file: string): Promise<string> {
  const bytes = await readFile(file)
  const sealed = bytes.subarray(0, 4).equals(ZSTD_MAGIC)
  return (sealed ? decompress(bytes) : bytes).toString('utf8')
}

/** Reads and parses a plain (`.jsonl`) or sealed (`.jsonl.zst`) session log. */
export async function readSessionLog(file: string): Promise<SessionLog> {
  return parseSessionLog(await readSessionText(file), file)
}

/**
 * The session logs in a sessions folder (`$DSH_HOME/sessions`), plain or
 * sealed, sorted by name; `[]` when the folder does not exist. Temp files of
 * an unfinished write are left out.
 */
export async function findSessionLogs(dir: string): Promise<string[]> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }
  return names
    .filter((name) => /\.jsonl(\.zst)?$/.test(name))
    .sort()
    .map((name) => path.join(dir, name))
}
