import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { appendFile, mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import type { SessionEvent, SessionId, SessionMeta } from '@dsh/session'
import {
  SessionBusyError,
  SessionLogError,
  SessionLogVersionError,
  SessionNotFoundError,
  type SessionPersistence,
} from '@dsh/session-persistence'
import { afterEach, describe, expect, it } from 'vitest'
import { decompress } from 'zstd-napi'
import * as jsonl from '../src/index.ts'
import { type Harness, harness, readLines } from './helpers.ts'

let h: Harness
let p: SessionPersistence
afterEach(async () => {
  await h?.dispose()
})

async function setup() {
  h = await harness({ writer: false })
  p = h.root.sessionPersistence
}

const id = (s: string) => s as SessionId
const meta = (sessionId: string, extra: Partial<SessionMeta> = {}): SessionMeta => ({
  id: id(sessionId),
  createdAt: 1000,
  cwd: '/work',
  ...extra,
})
const ev = (seq: number, type = 'turn/start', data: unknown = { turn: seq + 1 }) =>
  ({ seq, time: 2000 + seq, type, data }) as SessionEvent
const events = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => ev(from + i))
const fileOf = (sessionId: string) => path.join(h.sessionsDir, `${sessionId}.jsonl`)

describe('JSONL session persistence', () => {
  it('creates the log with its header and appends in order', async () => {
    await setup()
    await p.append(meta('s1', { title: 'first' }), events(0, 2))
    await p.append(meta('s1'), events(3, 4))
    const lines = await readLines(fileOf('s1'))
    expect(lines[0]).toEqual({ type: 'session', format: 1, id: 's1', createdAt: 1000, cwd: '/work', title: 'first' })
    expect(lines.slice(1).map((l) => l.seq)).toEqual([0, 1, 2, 3, 4])
    const log = await p.open(id('s1'))
    expect(log).toEqual({
      meta: meta('s1', { title: 'first' }),
      events: events(0, 4),
      problems: [],
      file: fileOf('s1'),
    })
    expect(await p.export(id('s1'))).toBe(await readFile(fileOf('s1'), 'utf8'))
  })

  it('creates a log holding its header alone from an append of no events, and continues it at seq 0', async () => {
    await setup()
    await p.append(meta('s0'), [])
    expect(await readLines(fileOf('s0'))).toEqual([
      { type: 'session', format: 1, id: 's0', createdAt: 1000, cwd: '/work' },
    ])
    expect(await p.open(id('s0'))).toEqual({ meta: meta('s0'), events: [], problems: [], file: fileOf('s0') })
    await p.append(meta('s0'), []) // the log exists: nothing to write
    await p.append(meta('s0'), events(0, 1))
    expect((await readLines(fileOf('s0'))).slice(1).map((l) => l.seq)).toEqual([0, 1])
  })

  it('refuses an append whose first seq does not follow the stored last seq', async () => {
    await setup()
    await p.append(meta('s1'), events(0, 2))
    await expect(p.append(meta('s1'), events(5, 6))).rejects.toThrow(
      `${fileOf('s1')}: cannot append event 5: the log ends at seq 2, so the next event must be 3`,
    )
    await expect(p.append(meta('s1'), events(2, 3))).rejects.toThrow(SessionLogError)
    await expect(p.append(meta('s1'), [ev(3), ev(3)])).rejects.toThrow('event seq 3 follows 3 in the same batch')
    expect((await p.open(id('s1'))).events).toEqual(events(0, 2))
  })

  it('seals to .zst atomically, reads sealed logs transparently and unseals on append', async () => {
    await setup()
    await p.append(meta('s1'), events(0, 2))
    const plain = await readFile(fileOf('s1'), 'utf8')
    await p.seal(id('s1'))
    await p.release(id('s1'))
    expect((await readdir(h.sessionsDir)).sort()).toEqual(['s1.jsonl.zst'])
    expect(decompress(await readFile(`${fileOf('s1')}.zst`)).toString('utf8')).toBe(plain)
    await p.seal(id('s1')) // already sealed: nothing to do
    expect(await p.export(id('s1'))).toBe(plain)
    const log = await p.open(id('s1'))
    expect(log.events).toEqual(events(0, 2))
    expect(log.file).toBe(`${fileOf('s1')}.zst`)
    expect(await p.stat(id('s1'))).toMatchObject({ id: 's1', sealed: true, file: `${fileOf('s1')}.zst` })

    await p.append(meta('s1'), events(3, 3))
    expect((await readdir(h.sessionsDir)).sort()).toEqual(['s1.jsonl', 's1.lock'])
    expect((await p.open(id('s1'))).events).toEqual(events(0, 3))
    expect(await p.stat(id('s1'))).toMatchObject({ sealed: false, file: fileOf('s1') })
  })

  it('reports a corrupt middle line with file and line number and reads the rest', async () => {
    await setup()
    await p.append(meta('s1'), events(0, 3))
    const lines = (await readFile(fileOf('s1'), 'utf8')).split('\n')
    lines[2] = '{"seq":1,"time":2001,"type":"turn/st'
    lines[3] = '[1,2]'
    await writeFile(fileOf('s1'), lines.join('\n'))
    const log = await p.open(id('s1'))
    expect(log.events.map((e) => e.seq)).toEqual([0, 3])
    expect(log.problems).toHaveLength(2)
    expect(log.problems[0]?.line).toBe(3)
    expect(log.problems[0]?.message).toMatch(
      new RegExp(`^${fileOf('s1')}:3: invalid JSON, line skipped \\(.*JSON.*\\)$`),
    )
    expect(log.problems[1]).toEqual({
      line: 4,
      message: `${fileOf('s1')}:4: not a session event (not a JSON object), line skipped`,
    })
    await p.append(meta('s1'), events(4, 4)) // the last readable seq was 3
    expect((await p.open(id('s1'))).events.map((e) => e.seq)).toEqual([0, 3, 4])
  })

  it('reports a torn last line and cuts it off before the next append', async () => {
    await setup()
    await p.append(meta('s1'), events(0, 2))
    await appendFile(fileOf('s1'), '{"seq":3,"time":2003,"ty')
    const log = await p.open(id('s1'))
    expect(log.events).toEqual(events(0, 2))
    expect(log.problems).toEqual([
      { line: 5, message: expect.stringMatching(new RegExp(`^${fileOf('s1')}:5: the last line is incomplete`)) },
    ])

    await p.append(meta('s1'), events(3, 4))
    const text = await readFile(fileOf('s1'), 'utf8')
    expect(text.endsWith('\n')).toBe(true)
    expect(
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line).seq),
    ).toEqual([undefined, 0, 1, 2, 3, 4])
    expect((await p.open(id('s1'))).problems).toEqual([])
    expect(h.logs.some((l) => l.type === 'warn' && l.text.includes('dropped an incomplete last line'))).toBe(true)
  })

  it('drops a torn tail that arrives while its write handle is cached', async () => {
    await setup()
    await p.append(meta('s1'), events(0, 1))
    await p.append(meta('s1'), events(2, 2)) // the handle is open now
    await appendFile(fileOf('s1'), '{"seq":3')
    await p.append(meta('s1'), events(3, 3))
    expect((await p.open(id('s1'))).events).toEqual(events(0, 3))
    expect((await p.open(id('s1'))).problems).toEqual([])
  })

  it('finds the last stored seq behind long lines and a corrupt last line', async () => {
    await setup()
    const big = (seq: number) => ev(seq, 'user/message', { text: `${seq}`.repeat(150_000) })
    await p.append(meta('s1', { title: 't'.repeat(100_000) }), [big(0), big(1)])
    await p.seal(id('s1'))
    expect(await p.stat(id('s1'))).toMatchObject({ sealed: true, title: 't'.repeat(100_000) })
    await p.append(meta('s1'), [big(2)])
    await appendFile(fileOf('s1'), 'garbage\n')
    await expect(p.append(meta('s1'), [ev(4)])).rejects.toThrow('the log ends at seq 2')
    await p.append(meta('s1'), [ev(3)])
    const log = await p.open(id('s1'))
    expect(log.events.map((e) => e.seq)).toEqual([0, 1, 2, 3])
    expect(log.problems.map((x) => x.line)).toEqual([5])
  })

  it('refuses a log written by a newer dsh', async () => {
    await setup()
    await mkdir(h.sessionsDir, { recursive: true })
    await writeFile(
      fileOf('s9'),
      `${JSON.stringify({ type: 'session', format: 2, id: 's9', createdAt: 1, cwd: '/' })}\n${JSON.stringify(ev(0))}\n`,
    )
    await expect(p.open(id('s9'))).rejects.toThrow(SessionLogVersionError)
    await expect(p.open(id('s9'))).rejects.toThrow(/written by a newer dsh.*upgrade/)
    await expect(p.append(meta('s9'), events(1, 1))).rejects.toThrow(/written by a newer dsh/)
  })

  it('names the root for an unknown id and refuses ids that leave it', async () => {
    await setup()
    await expect(p.open(id('nope'))).rejects.toThrow(SessionNotFoundError)
    await expect(p.open(id('nope'))).rejects.toThrow(`no session nope under ${h.sessionsDir}`)
    await expect(p.stat(id('nope'))).rejects.toThrow(SessionNotFoundError)
    await expect(p.export(id('nope'))).rejects.toThrow(SessionNotFoundError)
    await expect(p.seal(id('nope'))).rejects.toThrow(SessionNotFoundError)
    await expect(p.delete(id('nope'))).rejects.toThrow(SessionNotFoundError)
    for (const bad of ['../escape', 'a/b', 'a\\b', '..', '.hidden', '']) {
      await expect(p.open(id(bad))).rejects.toThrow(/invalid session id/)
      await expect(p.append(meta(bad), events(0, 0))).rejects.toThrow(/invalid session id/)
    }
    await expect(stat(path.join(h.sessionsDir, '..', 'escape.jsonl'))).rejects.toThrow(/ENOENT/)
  })

  it('lists sessions from their headers, skipping unreadable ones with a warning', async () => {
    await setup()
    await p.append(meta('a', { title: 'A' }), events(0, 1))
    await p.append(meta('b', { parentSession: id('a'), seedLength: 2 }), events(0, 3))
    await p.seal(id('b'))
    await writeFile(fileOf('broken'), 'this is not json\n')
    await writeFile(path.join(h.sessionsDir, 'notes.txt'), 'ignored')
    const list = await p.list()
    expect(list.map((s) => s.id).sort()).toEqual(['a', 'b'])
    const a = list.find((s) => s.id === 'a')
    const b = list.find((s) => s.id === 'b')
    expect(a).toMatchObject({
      id: 'a',
      title: 'A',
      cwd: '/work',
      createdAt: 1000,
      file: fileOf('a'),
      sealed: false,
      bytes: (await stat(fileOf('a'))).size,
    })
    expect(b).toMatchObject({ id: 'b', parentSession: 'a', seedLength: 2, file: `${fileOf('b')}.zst`, sealed: true })
    expect(typeof a?.updatedAt).toBe('number')
    expect(h.logs.filter((l) => l.type === 'warn').map((l) => l.text)).toContainEqual(
      expect.stringMatching(/skipping session broken .*header is not valid JSON/),
    )
  })

  it('lists only the logs modified since a time when asked', async () => {
    await setup()
    await p.append(meta('old'), events(0, 0))
    await p.append(meta('sealed'), events(0, 0))
    await p.seal(id('sealed'))
    await utimes(fileOf('old'), 1000, 1000)
    await utimes(`${fileOf('sealed')}.zst`, 1000, 1000)
    await p.append(meta('new'), events(0, 0))
    const since = (await stat(fileOf('new'))).mtimeMs
    expect((await p.list({ changedSince: since })).map((s) => s.id)).toEqual(['new'])
    expect((await p.list({ changedSince: 0 })).map((s) => s.id).sort()).toEqual(['new', 'old', 'sealed'])
    await p.append(meta('sealed'), events(1, 1)) // unseals and writes: modified now
    expect((await p.list({ changedSince: since })).map((s) => s.id).sort()).toEqual(['new', 'sealed'])
  })

  it('deletes a log, plain or sealed', async () => {
    await setup()
    await p.append(meta('a'), events(0, 0))
    await p.append(meta('b'), events(0, 0))
    await p.seal(id('b'))
    await p.delete(id('a'))
    await p.delete(id('b'))
    expect(await readdir(h.sessionsDir)).toEqual([])
    expect(await p.list()).toEqual([])
    await p.append(meta('a'), events(0, 0)) // a new log under the same id
    expect((await p.open(id('a'))).events).toEqual(events(0, 0))
  })

  it('lists nothing when the root does not exist yet', async () => {
    await setup()
    expect(await p.list()).toEqual([])
  })

  it('needs an absolute root, and leaves ctx.sessionPersistence when disposed', async () => {
    await setup()
    const other = new Context()
    await expect(other.plugin(jsonl, {} as never)).rejects.toThrow(/root missing required value/)
    await expect(other.plugin(jsonl, { root: 'relative/sessions' })).rejects.toThrow(/root must be an absolute path/)
    const fiber = other.plugin(jsonl, { root: h.sessionsDir })
    await fiber
    expect(other.get('sessionPersistence') !== undefined).toBe(true)
    await fiber.dispose()
    expect(other.get('sessionPersistence') === undefined).toBe(true)
  })
})

describe('session leases', () => {
  const leaseOf = (sessionId: string) => path.join(h.sessionsDir, `${sessionId}.lock`)
  const startTicks = (pid: number) => {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return text.slice(text.lastIndexOf(')') + 2).split(' ')[19]
  }
  /** A lease as another live dsh process would write it: a sleeping child's pid. */
  async function heldByOtherProcess(sessionId: string, edit: (record: Record<string, unknown>) => void = () => {}) {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' })
    await new Promise((resolve) => child.once('spawn', resolve))
    const record: Record<string, unknown> = {
      pid: child.pid,
      host: os.hostname(),
      since: 1_700_000_000_000,
      start: startTicks(child.pid as number),
    }
    edit(record)
    await mkdir(h.sessionsDir, { recursive: true })
    await writeFile(leaseOf(sessionId), JSON.stringify(record))
    return {
      pid: child.pid as number,
      stop: () =>
        new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve).kill() : resolve(undefined))),
    }
  }

  it('holds a session from its first append until release, in a file naming this process', async () => {
    await setup()
    await p.append(meta('s1'), events(0, 0))
    const record = JSON.parse(await readFile(leaseOf('s1'), 'utf8'))
    expect(record).toMatchObject({ pid: process.pid, host: os.hostname() })
    expect((await stat(leaseOf('s1'))).mode & 0o777).toBe(0o600)
    await p.claim(id('s1')) // already held: fine
    expect(await p.holder(id('s1'))).toBeUndefined() // this process is not "another" holder
    await p.release(id('s1'))
    expect(await readdir(h.sessionsDir)).toEqual(['s1.jsonl'])
    await p.release(id('s1')) // holds none: a no-op
  })

  it('refuses claim, append and delete while another live process holds the session, naming it', async () => {
    await setup()
    await p.append(meta('s1'), events(0, 0))
    await p.release(id('s1'))
    const other = await heldByOtherProcess('s1')
    try {
      const refused = await p.claim(id('s1')).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(SessionBusyError)
      expect((refused as SessionBusyError).holder).toMatchObject({ pid: other.pid, host: os.hostname() })
      expect((refused as Error).message).toBe(
        `session s1 is open in another dsh (process ${other.pid} on ${os.hostname()}, since 2023-11-14T22:13:20.000Z); finish or close it there first (if that process is gone, remove ${leaseOf('s1')})`,
      )
      await expect(p.append(meta('s1'), events(1, 1))).rejects.toThrow(SessionBusyError)
      await expect(p.delete(id('s1'))).rejects.toThrow(SessionBusyError)
      expect((await p.open(id('s1'))).events).toEqual(events(0, 0)) // reading is always allowed
      expect(await p.holder(id('s1'))).toEqual({ pid: other.pid, host: os.hostname(), since: 1_700_000_000_000 })
    } finally {
      await other.stop()
    }
    expect(await p.holder(id('s1'))).toBeUndefined() // its process is gone
    // Its process is gone: the lease is stale and taken over.
    await p.append(meta('s1'), events(1, 1))
    expect(JSON.parse(await readFile(leaseOf('s1'), 'utf8')).pid).toBe(process.pid)
  })

  it('takes over a lease whose pid now belongs to another process, or that holds no record', async () => {
    await setup()
    const reused = await heldByOtherProcess('s1', (record) => (record.start = '1'))
    try {
      await p.claim(id('s1'))
      expect(JSON.parse(await readFile(leaseOf('s1'), 'utf8')).pid).toBe(process.pid)
    } finally {
      await reused.stop()
    }
    await writeFile(leaseOf('s2'), 'garbage')
    await expect(p.claim(id('s2'))).rejects.toThrow('a process that left no readable record') // it may be being written
    const old = new Date(Date.now() - 5000)
    await utimes(leaseOf('s2'), old, old)
    await p.claim(id('s2'))
    expect(JSON.parse(await readFile(leaseOf('s2'), 'utf8')).pid).toBe(process.pid)
  })

  it('lets go of every lease when disposed, and deleting a log ends its lease', async () => {
    await setup()
    await p.append(meta('a'), events(0, 0))
    await p.append(meta('b'), events(0, 0))
    await p.delete(id('a'))
    expect((await readdir(h.sessionsDir)).sort()).toEqual(['b.jsonl', 'b.lock'])
    const sessionsDir = h.sessionsDir
    await h.root.fiber.dispose()
    expect(await readdir(sessionsDir)).toEqual(['b.jsonl'])
    await rm(h.dir, { recursive: true, force: true })
  })
})
