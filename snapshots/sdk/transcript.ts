// Recording and replaying SDK protocol transcripts: what a client wrote to
// `dsh --profile sdk` and what it printed back, with the run-specific values
// (ids, times, paths) replaced by placeholders.
import os from 'node:os'
import { normaliseMachineFacts } from '../../packages/test-support/replay/src/index.ts'
import type { DshResult } from '../../packages/test-support/testkit/src/index.ts'
import type { RpcMessage, SdkWire, WireEntry } from '../../apps/cli/tests/support/sdk-wire.ts'

/** One line of `transcript.jsonl`. */
export type TranscriptEntry =
  | { send: RpcMessage }
  | { sendRaw: string }
  | { recv: RpcMessage }
  | { exit: number | null }

const SESSION_ID = /session-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
/** A checkpoint's snapshot commit (its hash covers its time). */
const COMMIT = /\b[0-9a-f]{40}\b/g
const TIME_KEYS = new Set(['time', 'createdAt', 'updatedAt', 'durationMs'])
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * Maps run-specific values to placeholders (`out`) and back (`in`): the
 * workspace, the home and the system's home and temp folders; session ids as
 * `<session-N>`, other UUIDs as `<uuid-N>` and commits as `<commit-N>`, numbered in order of first
 * appearance; today's date as `<date>`. Epoch times (`time`, `createdAt`,
 * `updatedAt`) and measured durations (`durationMs`) are dropped.
 */
export class Normaliser {
  private readonly fixed: Array<[string, string]>
  private readonly ids = new Map<string, string>()
  private readonly counts = { session: 0, uuid: 0, commit: 0 }

  constructor(paths: { workspace: string; home: string }) {
    const today = new Date().toISOString().slice(0, 10)
    const entries: Array<[string, string]> = [
      [paths.workspace, '<workspace>'],
      [paths.home, '<home>'],
      [os.tmpdir(), '<tmp>'],
      [os.homedir(), '<user-home>'],
      [today, '<date>'],
    ]
    this.fixed = entries.filter(([text]) => text.length > 1).sort((a, b) => b[0].length - a[0].length)
  }

  private id(actual: string, kind: 'session' | 'uuid' | 'commit'): string {
    let placeholder = this.ids.get(actual)
    if (!placeholder) {
      placeholder = `<${kind}-${++this.counts[kind]}>`
      this.ids.set(actual, placeholder)
    }
    return placeholder
  }

  private outText(text: string): string {
    let out = text
      .replace(SESSION_ID, (id) => this.id(id, 'session'))
      .replace(UUID, (id) => this.id(id, 'uuid'))
      .replace(COMMIT, (id) => this.id(id, 'commit'))
    for (const [actual, placeholder] of this.fixed) out = out.split(actual).join(placeholder)
    return normaliseMachineFacts(out)
  }

  private inText(text: string): string {
    const pairs = [...this.fixed.map(([a, p]) => [p, a] as const), ...[...this.ids].map(([a, p]) => [p, a] as const)]
    if (pairs.length === 0) return text
    const lookup = new Map(pairs)
    return text.replace(new RegExp(pairs.map(([p]) => escapeRegExp(p)).join('|'), 'g'), (p) => lookup.get(p) ?? p)
  }

  out(value: unknown): unknown {
    return mapJson(value, (text) => this.outText(text), true)
  }

  in(value: unknown): unknown {
    return mapJson(value, (text) => this.inText(text), false)
  }
}

function mapJson(value: unknown, rewrite: (text: string) => string, dropTimes: boolean): unknown {
  if (typeof value === 'string') return rewrite(value)
  if (Array.isArray(value)) return value.map((item) => mapJson(item, rewrite, dropTimes))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) {
      if (dropTimes && TIME_KEYS.has(key) && typeof item === 'number') continue
      out[key] = mapJson(item, rewrite, dropTimes)
    }
    return out
  }
  return value
}

/** The wire entries of a finished run as transcript lines. */
export function transcriptOf(
  entries: readonly WireEntry[],
  exit: DshResult,
  normaliser: Normaliser,
): TranscriptEntry[] {
  const out = entries.map((entry): TranscriptEntry => {
    if ('recv' in entry) return { recv: normaliser.out(entry.recv) as RpcMessage }
    if ('send' in entry) return { send: normaliser.out(entry.send) as RpcMessage }
    return { sendRaw: normaliser.out(entry.sendRaw) as string }
  })
  out.push({ exit: exit.code })
  return out
}

export function parseTranscript(text: string): TranscriptEntry[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as TranscriptEntry)
}

export function formatTranscript(entries: readonly TranscriptEntry[]): string {
  return `${entries.map((entry) => JSON.stringify(entry)).join('\n')}\n`
}

/**
 * Plays the client side of a transcript against a running server: before
 * each line the client wrote, it waits until the server has printed as many
 * messages as the transcript shows before that line, then writes it with the
 * placeholders filled in. Resolves with what the server printed and its exit,
 * normalised, for comparison with the transcript's `recv` and `exit` lines.
 * A server that prints fewer messages than expected ends the replay early
 * (after the wait's timeout), so the comparison shows where it went apart.
 */
export async function replayTranscript(
  wire: SdkWire,
  transcript: readonly TranscriptEntry[],
  normaliser: Normaliser,
): Promise<TranscriptEntry[]> {
  let seen = 0
  const got: TranscriptEntry[] = []
  const pump = () => {
    while (seen < wire.received.length) got.push({ recv: normaliser.out(wire.received[seen++]) as RpcMessage })
  }
  const arrived = async (count: number) => {
    if (count > 0) await wire.waitFor(() => wire.received.length >= count, `message ${count}`)
    pump()
  }
  let expected = 0
  try {
    for (const entry of transcript) {
      if ('recv' in entry) expected++
      if (!('send' in entry) && !('sendRaw' in entry)) continue
      await arrived(expected)
      if ('send' in entry) wire.send(normaliser.in(entry.send) as RpcMessage)
      else wire.sendRaw(normaliser.in(entry.sendRaw) as string)
    }
    await arrived(expected)
  } catch {
    // Fewer messages than recorded: stop the server and compare what came.
    wire.proc.child.kill('SIGKILL')
  }
  const exit = await wire.exited
  pump()
  return [...got, { exit: exit.code }]
}

/** A transcript's `recv` and `exit` lines: what a replay is compared with. */
export function serverSide(entries: readonly TranscriptEntry[]): TranscriptEntry[] {
  return entries.filter((entry) => 'recv' in entry || 'exit' in entry)
}
