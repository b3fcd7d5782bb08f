import { readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { SessionEvent, SessionMeta } from '@dsh/session'
import { afterEach, describe, expect, it } from 'vitest'
import { JsonlSessionPersistence } from '../src/index.ts'
import { eventually, finishTurn, type Harness, harness, readLines, storedEvents, user } from './helpers.ts'

/** The real provider, counting the appends that reach it. */
class CountingPersistence extends JsonlSessionPersistence {
  appends: number[] = []
  override async append(meta: SessionMeta, events: readonly SessionEvent[]): Promise<void> {
    this.appends.push(events.length)
    return super.append(meta, events)
  }
}

let h: Harness
afterEach(async () => {
  await h?.dispose()
})

const fileOf = (id: string) => path.join(h.sessionsDir, `${id}.jsonl`)
const counting = () => h.root.sessionPersistence as unknown as CountingPersistence

describe('session-persistence writer with the JSONL provider', () => {
  it('writes the header and then every event in order', async () => {
    h = await harness()
    const session = h.store.create({ cwd: '/work', title: 'hello' })
    finishTurn(session, 1)
    session.append('llm/retry', {
      turn: 1,
      step: 1,
      attempt: 1,
      delayMs: 5,
      error: { code: 'RATE_LIMIT', message: 'slow down' },
    })
    await h.store.flush(session)
    const lines = await readLines(fileOf(session.id))
    expect(lines[0]).toEqual({
      type: 'session',
      format: 1,
      id: session.id,
      createdAt: session.meta.createdAt,
      cwd: '/work',
      title: 'hello',
    })
    expect(lines.slice(1)).toEqual(JSON.parse(JSON.stringify(session.events)))
    expect(await storedEvents(fileOf(session.id))).toEqual([
      '0:turn/start',
      '1:user/message',
      '2:turn/end',
      '3:llm/retry',
    ])
  })

  /** A session of the counting provider with a turn start and two messages appended in a `batchDelayMs` window. */
  async function threeEventsBatched(batchDelayMs: number) {
    h = await harness({ provider: CountingPersistence, writer: { batchDelayMs } })
    const session = h.store.create({ cwd: '/work' })
    session.append('turn/start', { turn: 1 })
    session.append('user/message', user('a'))
    session.append('user/message', user('b'))
    return session
  }

  it('batches the events of a window into one append', async () => {
    const session = await threeEventsBatched(60_000)
    await h.store.flush(session)
    expect(counting().appends).toEqual([3])
    expect(await storedEvents(fileOf(session.id))).toEqual(['0:turn/start', '1:user/message', '2:user/message'])
    session.append('user/message', user('c'))
    session.append('user/message', user('d'))
    await h.store.flush(session)
    expect(counting().appends).toEqual([3, 2])
    expect(await storedEvents(fileOf(session.id))).toHaveLength(5)
  })

  it('writes a window once it ends, without a flush', async () => {
    const session = await threeEventsBatched(20)
    await eventually(async () => expect(await storedEvents(fileOf(session.id))).toHaveLength(3))
    expect(counting().appends).toEqual([3])
  })

  it('writes at turn/end without waiting for the window', async () => {
    h = await harness({ provider: CountingPersistence, writer: { batchDelayMs: 600_000 } })
    const session = h.store.create({ cwd: '/work' })
    finishTurn(session, 1)
    await eventually(async () =>
      expect(await storedEvents(fileOf(session.id))).toEqual(['0:turn/start', '1:user/message', '2:turn/end']),
    )
    expect(counting().appends).toEqual([3])
  })

  it('resumes a sealed log: contiguous seqs, no duplicates, unsealed again', async () => {
    h = await harness()
    const first = h.store.create({ cwd: '/work' })
    finishTurn(first, 1)
    await h.store.close(first)
    await expect(stat(`${fileOf(first.id)}.zst`)).resolves.toBeTruthy()
    await expect(stat(fileOf(first.id))).rejects.toThrow(/ENOENT/)

    const log = await h.root.sessionPersistence.open(first.id)
    expect(log.problems).toEqual([])
    const resumed = h.store.create({
      id: log.meta.id,
      cwd: log.meta.cwd,
      createdAt: log.meta.createdAt,
      seed: log.events,
      seedStored: true,
    })
    finishTurn(resumed, 2)
    await h.store.flush(resumed)

    const again = await h.root.sessionPersistence.open(first.id)
    expect(again.problems).toEqual([])
    expect(again.events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(again.events.map((e) => e.type)).toEqual([
      'turn/start',
      'user/message',
      'turn/end',
      'session/end-seed',
      'turn/start',
      'user/message',
      'turn/end',
    ])
    expect(again.file).toBe(fileOf(first.id))
    await expect(stat(`${fileOf(first.id)}.zst`)).rejects.toThrow(/ENOENT/)
  })

  it('writes a fork with its inherited prefix', async () => {
    h = await harness()
    const parent = h.store.create({ cwd: '/work' })
    finishTurn(parent, 1)
    finishTurn(parent, 2)
    await h.store.flush(parent)
    const child = h.store.fork(parent, { throughTurn: 1 })
    child.append('turn/start', { turn: 2 })
    await h.store.flush(child)
    const lines = await readLines(fileOf(child.id))
    expect(lines[0]).toMatchObject({ type: 'session', id: child.id, forkedFrom: parent.id, seedLength: 3 })
    expect(await storedEvents(fileOf(child.id))).toEqual([
      '0:turn/start',
      '1:user/message',
      '2:turn/end',
      '3:session/end-seed',
      '4:turn/start',
    ])
    expect(lines.slice(1, 4)).toEqual(JSON.parse(JSON.stringify(parent.events.slice(0, 3))))
    expect(await storedEvents(fileOf(parent.id))).toHaveLength(6)
  })

  it('logs a failed write and retries it on the next flush without losing events', async () => {
    h = await harness()
    const session = h.store.create({ cwd: '/work' })
    finishTurn(session, 1)
    await h.store.flush(session)
    expect(await storedEvents(fileOf(session.id))).toHaveLength(3)

    // Put a plain file where the sessions folder was: every write fails.
    await rename(h.sessionsDir, `${h.sessionsDir}.away`)
    await writeFile(h.sessionsDir, 'not a folder')
    finishTurn(session, 2)
    await h.store.flush(session)
    expect(h.logs.filter((l) => l.type === 'error').map((l) => l.text)).toContainEqual(
      expect.stringMatching(new RegExp(`session ${session.id}: writing 3 event\\(s\\) failed`)),
    )

    await rm(h.sessionsDir)
    await rename(`${h.sessionsDir}.away`, h.sessionsDir)
    session.append('user/message', user('after the outage'))
    await h.store.flush(session)
    const log = await h.root.sessionPersistence.open(session.id)
    expect(log.events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(log.problems).toEqual([])
  })

  it('drains pending events when the writer is disposed, then stops listening', async () => {
    h = await harness({ writer: false })
    const writer = await h.mountWriter({ batchDelayMs: 600_000 })
    const session = h.store.create({ cwd: '/work' })
    session.append('turn/start', { turn: 1 })
    session.append('user/message', user('pending'))
    await writer.dispose()
    expect(await storedEvents(fileOf(session.id))).toEqual(['0:turn/start', '1:user/message'])
    session.append('turn/end', { turn: 1, reason: 'aborted', cause: 'shutdown' })
    await h.store.flush(session)
    expect(await storedEvents(fileOf(session.id))).toHaveLength(2)
  })

  it('drains pending events when the whole app is disposed', async () => {
    h = await harness({ writer: { batchDelayMs: 600_000 } })
    const session = h.store.create({ cwd: '/work' })
    session.append('turn/start', { turn: 1 })
    session.append('user/message', user('pending'))
    await h.root.fiber.dispose()
    expect(await storedEvents(fileOf(session.id))).toEqual(['0:turn/start', '1:user/message'])
    expect(h.logs.filter((l) => l.type === 'error')).toEqual([])
  })

  it('continues a live session after the writer is mounted again (a config reload)', async () => {
    h = await harness({ writer: false })
    let writer = await h.mountWriter({ batchDelayMs: 600_000 })
    const session = h.store.create({ cwd: '/work' })
    finishTurn(session, 1)
    await h.store.flush(session)
    await writer.dispose()
    session.append('turn/start', { turn: 2 }) // nobody is listening
    writer = await h.mountWriter({ batchDelayMs: 600_000 })
    session.append('turn/end', { turn: 2, reason: 'completed' })
    await h.store.flush(session)
    expect(await storedEvents(fileOf(session.id))).toEqual([
      '0:turn/start',
      '1:user/message',
      '2:turn/end',
      '3:turn/start',
      '4:turn/end',
    ])
  })

  it('seals on close unless configured not to', async () => {
    h = await harness({ writer: { seal: false } })
    const session = h.store.create({ cwd: '/work' })
    finishTurn(session, 1)
    await h.store.close(session)
    expect(await storedEvents(fileOf(session.id))).toHaveLength(3)
    await expect(stat(`${fileOf(session.id)}.zst`)).rejects.toThrow(/ENOENT/)
    // Closed, sealed or not: other processes may open it now.
    await expect(stat(path.join(h.sessionsDir, `${session.id}.lock`))).rejects.toThrow(/ENOENT/)
    // A session with no events yet is stored as its header alone once flushed (closing flushes).
    const empty = h.store.create({ cwd: '/work' })
    await h.store.close(empty)
    expect(await h.root.sessionPersistence.list()).toHaveLength(2)
    expect((await h.root.sessionPersistence.open(empty.id)).events).toEqual([])
  })

  it('keeps logs 0600 in a 0700 folder', async () => {
    h = await harness()
    const session = h.store.create({ cwd: '/work' })
    finishTurn(session, 1)
    await h.store.flush(session)
    expect((await stat(h.sessionsDir)).mode & 0o777).toBe(0o700)
    expect((await stat(fileOf(session.id))).mode & 0o777).toBe(0o600)
    expect((await stat(path.join(h.sessionsDir, `${session.id}.lock`))).mode & 0o777).toBe(0o600)
    await h.store.close(session)
    expect((await stat(`${fileOf(session.id)}.zst`)).mode & 0o777).toBe(0o600)
    expect(await readdir(h.sessionsDir)).toEqual([`${session.id}.jsonl.zst`])
  })
})
