import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'

export interface LoggedEvent {
  seq: number
  type: string
  data: Record<string, any>
  replaces?: number[]
  ignorable?: true
}

/** A stored session log under `<home>/sessions`, sealed (zstd) or not: its header line and its events. */
export async function readSessionLog(home: string, sessionId: string): Promise<{ header: Record<string, unknown>; events: LoggedEvent[] }> {
  const file = path.join(home, 'sessions', `${sessionId}.jsonl`)
  let text: string
  if (existsSync(file)) text = readFileSync(file, 'utf8')
  else {
    const { decompress } = await import('zstd-napi')
    text = decompress(readFileSync(`${file}.zst`)).toString('utf8')
  }
  const [header, ...events] = text.trim().split('\n').map((line) => JSON.parse(line))
  return { header, events }
}
