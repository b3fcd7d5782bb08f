import { mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { format } from 'node:util'
import { Context } from '@dsh/cordis'
import { type Session, SessionStore, textMessage } from '@dsh/session'
import * as writer from '@dsh/session-persistence'
import * as jsonl from '../src/index.ts'

export interface Harness {
  root: Context
  store: SessionStore
  dir: string
  /** The sessions folder given to the provider. */
  sessionsDir: string
  logs: { type: string; text: string }[]
  /** Mounts the writer plugin; returns its fiber. */
  mountWriter(config?: Partial<writer.SessionWriterConfig>): Promise<{ dispose(): Promise<void> }>
  dispose(): Promise<void>
}

export interface HarnessOptions {
  /** Writer config, or false to leave the writer out. */
  writer?: Partial<writer.SessionWriterConfig> | false
  /** A provider class to mount instead of the plugin (e.g. one that counts appends). */
  provider?: typeof jsonl.JsonlSessionPersistence
}

export async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'dsh-persistence-'))
  const sessionsDir = path.join(dir, 'home', 'sessions')
  const root = new Context()
  const logs: { type: string; text: string }[] = []
  root.logger.exporter({ export: (message) => void logs.push({ type: message.type, text: format(...message.args) }) })
  await root.plugin(SessionStore)
  if (options.provider) await root.plugin(options.provider, { root: sessionsDir })
  else await root.plugin(jsonl, { root: sessionsDir })
  const mountWriter = async (config: Partial<writer.SessionWriterConfig> = {}) => {
    const fiber = root.plugin(writer, config)
    await fiber
    return fiber
  }
  if (options.writer !== false) await mountWriter(options.writer ?? {})
  return {
    root,
    store: root.sessions,
    dir,
    sessionsDir,
    logs,
    mountWriter,
    async dispose() {
      await root.fiber.dispose()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

export const user = (text: string) => ({ message: textMessage('user', text, { kind: 'user' }) })

/** Parsed lines of a plain log (header first). */
export async function readLines(file: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(file, 'utf8')
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

/** Seqs and types of the events in a plain log. */
export async function storedEvents(file: string): Promise<string[]> {
  const lines = await readLines(file).catch(() => [])
  return lines.slice(1).map((e) => `${e.seq}:${e.type}`)
}

/** Waits until `check` passes; fails with its last error after `limitMs`. Not a timing assertion: only a bound. */
export async function eventually(check: () => Promise<void> | void, limitMs = 5000): Promise<void> {
  const until = Date.now() + limitMs
  for (;;) {
    try {
      await check()
      return
    } catch (error) {
      if (Date.now() > until) throw error
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
}

export function finishTurn(session: Session, turn: number): void {
  session.append('turn/start', { turn })
  session.append('user/message', user(`question ${turn}`))
  session.append('turn/end', { turn, reason: 'completed' })
}
