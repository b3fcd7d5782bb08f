import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { format } from 'node:util'
import { Context } from '@dsh/cordis'
import type { TokenUsage } from '@dsh/llm'
import {
  type Session,
  type SessionEvent,
  type SessionId,
  type SessionMeta,
  SessionStore,
  textMessage,
} from '@dsh/session'
import * as writer from '@dsh/session-persistence'
import * as jsonl from '@dsh/session-persistence-jsonl'
import * as catalog from '../src/index.ts'

export interface Harness {
  root: Context
  dir: string
  sessionsDir: string
  dbFile: string
  logs: string[]
  /** Mounts the catalog plugin (again); returns its fiber. */
  mountCatalog(config?: Partial<catalog.SessionCatalogConfig>): Promise<{ dispose(): Promise<void> }>
  dispose(): Promise<void>
}

/** A root context with the session store, the JSONL provider and the writer; the catalog is mounted by the test. */
export async function harness(): Promise<Harness> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'dsh-catalog-'))
  const sessionsDir = path.join(dir, 'home', 'sessions')
  const dbFile = path.join(dir, 'home', 'catalog.sqlite')
  const root = new Context()
  const logs: string[] = []
  root.logger.exporter({ export: (message) => void logs.push(`${message.type}: ${format(...message.args)}`) })
  await root.plugin(SessionStore)
  await root.plugin(jsonl, { root: sessionsDir })
  await root.plugin(writer, { batchDelayMs: 600_000 })
  return {
    root,
    dir,
    sessionsDir,
    dbFile,
    logs,
    async mountCatalog(config = {}) {
      const fiber = root.plugin(catalog, { path: dbFile, flushDelayMs: 600_000, ...config })
      await fiber
      return fiber
    },
    async dispose() {
      await root.fiber.dispose()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

export const userMessage = (text: string) => ({ message: textMessage('user', text, { kind: 'user' }) })

export const reply = (turn: number, text: string, usage?: TokenUsage) => ({
  turn,
  step: 1,
  message: textMessage('assistant', text, { kind: 'model', provider: 'deepseek', model: 'm' }),
  finish: 'stop' as const,
  ...(usage ? { usage } : {}),
})

/** One finished turn: the user's prompt and the model's answer. */
export function turn(session: Session, n: number, prompt: string, answer: string, usage?: TokenUsage): void {
  session.append('turn/start', { turn: n })
  session.append('user/message', userMessage(prompt))
  session.append('assistant/message', reply(n, answer, usage))
  session.append('turn/end', { turn: n, reason: 'completed' })
}

/** The events of one finished turn at fixed times, for logs written straight to the store. */
export function storedTurn(firstSeq: number, time: number, prompt: string, answer: string): SessionEvent[] {
  const events = [
    { type: 'turn/start', data: { turn: 1 } },
    { type: 'user/message', data: userMessage(prompt) },
    { type: 'assistant/message', data: reply(1, answer) },
    { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
  ]
  return events.map((event, i) => ({ ...event, seq: firstSeq + i, time: time + i }) as SessionEvent)
}

export function meta(id: string, fields: Partial<SessionMeta> = {}): SessionMeta {
  return { id: id as SessionId, createdAt: 1_000, cwd: '/work/a', ...fields }
}

/** Waits until `check` passes; fails with its last error after `limitMs` (a bound, not a timing assertion). */
export async function eventually(check: () => void, limitMs = 10_000): Promise<void> {
  const until = Date.now() + limitMs
  for (;;) {
    try {
      check()
      return
    } catch (error) {
      if (Date.now() > until) throw error
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
}
