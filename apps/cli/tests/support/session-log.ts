import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { STEP_OPENING } from '@dsh/testkit'
import { expect } from 'vitest'

export interface LoggedEvent {
  seq: number
  type: string
  data: Record<string, any>
  replaces?: number[]
  ignorable?: true
}

/** What one turn logs when the model calls one tool that may change files (a checkpoint first), then answers. */
export const ONE_TOOL_TURN = [
  ...STEP_OPENING,
  'assistant/message',
  'tool/call',
  'checkpoint/created',
  'tool/result',
  'step/end',
  'step/start',
  'assistant/message',
  'step/end',
  'turn/end',
]

/** The text of a stored session log under `<home>/sessions`, sealed (zstd) or not. */
export async function sessionLogText(home: string, sessionId: string): Promise<string> {
  const file = path.join(home, 'sessions', `${sessionId}.jsonl`)
  if (existsSync(file)) return readFileSync(file, 'utf8')
  const { decompress } = await import('zstd-napi')
  return decompress(readFileSync(`${file}.zst`)).toString('utf8')
}

/** A stored session log under `<home>/sessions`, sealed (zstd) or not: its header line and its events. */
export async function readSessionLog(
  home: string,
  sessionId: string,
): Promise<{ header: Record<string, unknown>; events: LoggedEvent[] }> {
  const text = await sessionLogText(home, sessionId)
  const [header, ...events] = text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  return { header, events }
}

/** The id of the one session stored under `<home>/sessions`; fails the test when there is not exactly one. */
export function onlyStoredSession(home: string): string {
  const dir = path.join(home, 'sessions')
  const files = existsSync(dir) ? readdirSync(dir) : []
  expect(files).toHaveLength(1)
  return (files[0] as string).replace(/\.jsonl(\.zst)?$/, '')
}

/** The parsed lines of a JSON Lines file, none when the file does not exist (yet). */
export function jsonLines(file: string): any[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
}

/** The text that streamed deltas of one kind (`text`, `reasoning`) add up to. */
export function streamedText(deltas: any[], kind: string): string {
  return deltas
    .filter((d) => d.kind === kind)
    .map((d) => d.delta)
    .join('')
}
