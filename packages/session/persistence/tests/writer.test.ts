import { format } from 'node:util'
import { type Context as ContextType, Context } from '@dsh/cordis'
import { type SessionEvent, type SessionId, type SessionMeta, SessionStore, textMessage } from '@dsh/session'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as writer from '../src/index.ts'
import {
  type OpenedLog,
  SessionInUseError,
  SessionNotFoundError,
  SessionPersistence,
  type StoredSession,
} from '../src/index.ts'

/**
 * A complete in-memory provider of the seam: enough to watch what the
 * writer hands to a provider, batch by batch. `failing` makes appends fail.
 */
class MemoryPersistence extends SessionPersistence {
  logs = new Map<string, { meta: SessionMeta; events: SessionEvent[]; sealed: boolean }>()
  batches: string[][] = []
  sealCalls: string[] = []
  failing = false

  constructor(ctx: ContextType) {
    super(ctx)
  }

  async append(meta: SessionMeta, events: readonly SessionEvent[]): Promise<void> {
    this.batches.push(events.map((e) => `${e.seq}:${e.type}`))
    if (this.failing) throw new Error('disk full')
    const log = this.logs.get(meta.id) ?? { meta, events: [], sealed: false }
    const last = log.events.at(-1)?.seq ?? -1
    if (events[0] && events[0].seq !== last + 1) throw new Error(`seq ${events[0].seq} does not follow ${last}`)
    log.events.push(...events)
    log.sealed = false
    this.logs.set(meta.id, log)
  }

  private get(id: string) {
    const log = this.logs.get(id)
    if (!log) throw new SessionNotFoundError(id, 'memory')
    return log
  }

  async open(id: SessionId): Promise<OpenedLog> {
    const log = this.get(id)
    return { meta: log.meta, events: [...log.events], problems: [], file: `memory:${id}` }
  }

  async stat(id: SessionId): Promise<StoredSession> {
    const log = this.get(id)
    return { ...log.meta, file: `memory:${id}`, updatedAt: 0, bytes: 0, sealed: log.sealed }
  }

  async list(): Promise<StoredSession[]> {
    return Promise.all([...this.logs.keys()].map((id) => this.stat(id as SessionId)))
  }

  async export(id: SessionId): Promise<string> {
    return this.get(id)
      .events.map((e) => `${JSON.stringify(e)}\n`)
      .join('')
  }

  async seal(id: SessionId): Promise<void> {
    this.sealCalls.push(id)
    this.get(id).sealed = true
  }

  async delete(id: SessionId): Promise<void> {
    this.get(id)
    this.logs.delete(id)
  }
}

let root: Context
let store: SessionStore
let memory: MemoryPersistence
let logs: string[]

beforeEach(async () => {
  root = new Context()
  logs = []
  root.logger.exporter({ export: (m) => void logs.push(`${m.type}: ${format(...m.args)}`) })
  await root.plugin(SessionStore)
  await root.plugin(MemoryPersistence)
  store = root.sessions
  memory = root.sessionPersistence as unknown as MemoryPersistence
})
afterEach(() => root.fiber.dispose())

const user = (text: string) => ({ message: textMessage('user', text, { kind: 'user' }) })
const mount = async (config: Partial<writer.SessionWriterConfig> = {}) => {
  const fiber = root.plugin(writer, { batchDelayMs: 600_000, ...config })
  await fiber
  return fiber
}

describe('session-persistence writer', () => {
  it('defaults to a 200 ms window and sealing', () => {
    expect(writer.Config({})).toEqual({ batchDelayMs: 200, seal: true })
  })

  it('hands one batch per window, the next batch after it, and writes turn/end at once', async () => {
    await mount()
    const session = store.create({ cwd: '/w' })
    session.append('turn/start', { turn: 1 })
    session.append('user/message', user('a'))
    await store.flush(session)
    session.append('user/message', user('b'))
    session.append('turn/end', { turn: 1, reason: 'completed' })
    await store.flush(session)
    expect(memory.batches).toEqual([
      ['0:turn/start', '1:user/message'],
      ['2:user/message', '3:turn/end'],
    ])
  })

  it('stores the header alone when a session with no events is flushed, and the first events after it', async () => {
    await mount()
    const session = store.create({ cwd: '/w' })
    await store.flush(session)
    expect(memory.logs.get(session.id)?.events).toEqual([])
    await store.flush(session) // stored now: nothing more to write
    session.append('turn/start', { turn: 1 })
    await store.flush(session)
    expect(memory.batches).toEqual([[], ['0:turn/start']])
  })

  it('keeps the events of a failed write, logs it, and sends them with the next flush', async () => {
    await mount()
    const session = store.create({ cwd: '/w' })
    memory.failing = true
    session.append('turn/start', { turn: 1 })
    await store.flush(session) // no throw into the session
    expect(logs).toContainEqual(
      expect.stringMatching(/^error: session .*: writing 1 event\(s\) failed \(kept for the next try\): disk full$/),
    )
    memory.failing = false
    session.append('user/message', user('a'))
    await store.flush(session)
    expect(memory.batches).toEqual([['0:turn/start'], ['0:turn/start', '1:user/message']])
    expect((await memory.open(session.id)).events.map((e) => e.seq)).toEqual([0, 1])
  })

  it('writes a fork’s inherited prefix but not a resume’s', async () => {
    await mount()
    const parent = store.create({ cwd: '/w' })
    parent.append('turn/start', { turn: 1 })
    parent.append('turn/end', { turn: 1, reason: 'completed' })
    await store.flush(parent)
    const child = store.fork(parent)
    await store.flush(child)
    expect(memory.logs.get(child.id)?.events.map((e) => `${e.seq}:${e.type}`)).toEqual([
      '0:turn/start',
      '1:turn/end',
      '2:session/end-seed',
    ])

    await store.close(parent)
    const stored = await memory.open(parent.id)
    memory.batches = []
    const resumed = store.create({ id: parent.id, cwd: '/w', seed: stored.events, seedStored: true })
    await store.flush(resumed)
    expect(memory.batches).toEqual([['2:session/end-seed']])
  })

  it('seals on close, an empty session too (its header is its log), and only when configured', async () => {
    await mount()
    const empty = store.create({ cwd: '/w' })
    await store.close(empty)
    expect((await memory.open(empty.id)).events).toEqual([])
    const used = store.create({ cwd: '/w' })
    used.append('turn/start', { turn: 1 })
    await store.close(used)
    expect(memory.sealCalls).toEqual([empty.id, used.id])
  })

  it('does not seal when seal is false', async () => {
    await mount({ seal: false })
    const session = store.create({ cwd: '/w' })
    session.append('turn/start', { turn: 1 })
    await store.close(session)
    expect(memory.sealCalls).toEqual([])
    expect(memory.logs.get(session.id)?.events).toHaveLength(1)
  })

  it('drains on dispose and removes its listeners', async () => {
    const fiber = await mount()
    const session = store.create({ cwd: '/w' })
    session.append('turn/start', { turn: 1 })
    await fiber.dispose()
    expect(memory.batches).toEqual([['0:turn/start']])
    session.append('turn/end', { turn: 1, reason: 'completed' })
    await store.flush(session)
    expect(memory.batches).toEqual([['0:turn/start']])
  })
})

describe('SessionPersistence.remove', () => {
  it('refuses a session open in this process and removes it once closed', async () => {
    await mount()
    const session = store.create({ cwd: '/w' })
    session.append('turn/start', { turn: 1 })
    await store.flush(session)
    await expect(memory.remove(session.id)).rejects.toThrow(
      `session ${session.id} is open in this process; close it before removing its log`,
    )
    await expect(memory.remove(session.id)).rejects.toBeInstanceOf(SessionInUseError)
    expect(memory.logs.has(session.id)).toBe(true)
    await store.close(session)
    await memory.remove(session.id)
    expect(memory.logs.has(session.id)).toBe(false)
    await expect(memory.remove(session.id)).rejects.toBeInstanceOf(SessionNotFoundError)
  })
})
