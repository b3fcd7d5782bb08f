import { existsSync, statSync } from 'node:fs'
import { readdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import Database from 'better-sqlite3'
import { Context } from '@dsh/cordis'
import { type SessionId, SessionStore } from '@dsh/session'
import * as jsonl from '@dsh/session-persistence-jsonl'
import { SessionInUseError, SessionNotFoundError } from '@dsh/session-persistence'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as catalog from '../src/index.ts'
import { Config, SCHEMA_VERSION } from '../src/index.ts'
import { eventually, type Harness, harness, meta, storedTurn, turn } from './helpers.ts'

let h: Harness
beforeEach(async () => {
  h = await harness()
})
afterEach(() => h.dispose())

const ids = (entries: { sessionId: string }[]) => entries.map((e) => e.sessionId)

/** Five stored top-level sessions a..e (e newest) in two folders, plus a child of c. */
async function storeSessions(): Promise<void> {
  const p = h.root.sessionPersistence
  const folders = ['/work/a', '/work/b', '/work/a', '/work/b', '/work/a']
  for (const [i, id] of ['a', 'b', 'c', 'd', 'e'].entries()) {
    await p.append(
      meta(id, { cwd: folders[i] as string, createdAt: 1000 * i }),
      storedTurn(0, 1000 * i + 10, `prompt about topic${id}`, `answer number ${id}`),
    )
  }
  await p.append(
    meta('c-child', { parentSession: 'c' as SessionId, createdAt: 2500 }),
    storedTurn(0, 2510, 'child task on topicc', 'child done'),
  )
}

describe('session catalog', () => {
  it('defaults its config, and needs an absolute path', async () => {
    expect(Config({ path: '/x/catalog.sqlite' })).toMatchObject({
      openDelayMs: 1000,
      flushDelayMs: 1000,
      chunkChars: 16_000,
      defaultLimit: 50,
      snippetOpen: '«',
    })
    await expect(h.mountCatalog({ path: 'relative.sqlite' })).rejects.toThrow(
      'session-catalog: path must be an absolute path, got "relative.sqlite"',
    )
  })

  it('indexes a session as its events arrive: counts, tokens, title, text', async () => {
    await h.mountCatalog()
    const session = h.root.sessions.create({ cwd: '/work/a' })
    turn(session, 1, 'Why does the zebra test fail?', 'Because the fixture is stale.', {
      inputTokens: 100,
      outputTokens: 20,
      cacheReadTokens: 7,
    })
    turn(session, 2, 'Fix it please', 'Done: regenerated the giraffe fixture.', { inputTokens: 50, outputTokens: 10 })
    session.append('session/title' as 'turn/start', { title: 'Zebra test repair', source: 'model' } as never)

    const entry = await h.root.sessionCatalog.get(session.id)
    expect(entry).toEqual({
      sessionId: session.id,
      title: 'Zebra test repair',
      preview: 'Why does the zebra test fail?',
      cwd: '/work/a',
      createdAt: session.meta.createdAt,
      updatedAt: session.events.at(-1)?.time,
      userMessages: 2,
      assistantMessages: 2,
      inputTokens: 150,
      outputTokens: 30,
    })
    const hits = await h.root.sessionCatalog.search('giraffe')
    expect(ids(hits)).toEqual([session.id])
    expect(hits[0]?.snippet).toContain('«giraffe»')
    expect(ids(await h.root.sessionCatalog.search('repair'))).toEqual([session.id]) // the title
    expect(await h.root.sessionCatalog.search('elephant')).toEqual([])
  })

  it('writes at a turn end and on session flush, without a read', async () => {
    await h.mountCatalog({ flushDelayMs: 600_000 })
    const session = h.root.sessions.create({ cwd: '/work/a' })
    turn(session, 1, 'first words', 'okay')
    await h.root.sessions.flush(session)
    const db = new Database(h.dbFile, { readonly: true })
    try {
      expect(db.prepare('SELECT id, user_messages FROM sessions').all()).toEqual([{ id: session.id, user_messages: 1 }])
    } finally {
      db.close()
    }
  })

  it('lists newest first with cursor paging, a folder filter, and children on request', async () => {
    await storeSessions()
    await h.mountCatalog()
    const catalog = h.root.sessionCatalog
    const first = await catalog.list({ limit: 2 })
    expect(ids(first.sessions)).toEqual(['e', 'd'])
    const second = await catalog.list({ limit: 2, cursor: first.nextCursor as string })
    expect(ids(second.sessions)).toEqual(['c', 'b'])
    const third = await catalog.list({ limit: 2, cursor: second.nextCursor as string })
    expect(ids(third.sessions)).toEqual(['a'])
    expect(third.nextCursor).toBeUndefined()

    expect(ids((await catalog.list({ cwd: '/work/b' })).sessions)).toEqual(['d', 'b'])
    expect(ids((await catalog.list({ includeChildren: true })).sessions)).toEqual(['e', 'd', 'c-child', 'c', 'b', 'a'])
    expect((await catalog.get('c-child'))?.parentSession).toBe('c')
    expect(ids((await catalog.list({ query: 'topicc', includeChildren: true })).sessions)).toEqual(['c-child', 'c'])
    expect(ids((await catalog.list({ query: 'topicc' })).sessions)).toEqual(['c'])
    await expect(catalog.list({ cursor: 'nonsense' })).rejects.toThrow('invalid cursor "nonsense"')
    await expect(catalog.list({ limit: 0 })).rejects.toThrow('invalid limit 0')
  })

  it('searches by words, ranked, in one folder, and never parses what the user typed as FTS syntax', async () => {
    await storeSessions()
    await h.mountCatalog()
    const catalog = h.root.sessionCatalog
    expect(ids(await catalog.search('topicd'))).toEqual(['d'])
    expect(ids(await catalog.search('answer number', { cwd: '/work/b' })).sort()).toEqual(['b', 'd'])
    expect(ids(await catalog.search('prompt topica'))).toEqual(['a']) // every word must match
    for (const text of [
      '"',
      'topica"',
      'AND',
      'topica OR',
      'NEAR(topica',
      '(topica',
      'topic*',
      '-topica',
      'title:x',
      '^topica',
      '',
      '  ',
      '***',
    ]) {
      await expect(catalog.search(text), text).resolves.toBeInstanceOf(Array)
    }
    expect(ids(await catalog.search('(topica)'))).toEqual(['a'])
  })

  it('finds Chinese and Japanese words inside sentences, and shows them as written in the snippet', async () => {
    await h.mountCatalog()
    const zh = h.root.sessions.create({ cwd: '/work/a' })
    turn(zh, 1, '请帮我实现会话目录的全文搜索功能', '好的，我会先阅读现有的代码。')
    const ja = h.root.sessions.create({ cwd: '/work/a' })
    turn(ja, 1, 'テストを実行してください', 'すべてのテストが成功しました')
    const catalog = h.root.sessionCatalog
    const hits = await catalog.search('全文搜索')
    expect(ids(hits)).toEqual([zh.id])
    expect(hits[0]?.snippet).toContain('«全文搜索»')
    expect(hits[0]?.snippet).not.toContain('\u200b')
    expect(ids(await catalog.search('阅读 代码'))).toEqual([zh.id]) // every word, anywhere
    expect(ids(await catalog.search('搜全'))).toEqual([]) // the characters in their order
    expect(ids(await catalog.search('テスト'))).toEqual([ja.id])
    expect(ids(await catalog.search('成功'))).toEqual([ja.id])
  })

  it('rebuilds from the logs when the database is missing, including sealed logs', async () => {
    const fiber = await h.mountCatalog()
    const session = h.root.sessions.create({ cwd: '/work/a' })
    turn(session, 1, 'a question about kangaroos', 'an answer')
    await h.root.sessions.close(session) // written and sealed
    expect((await readdir(h.sessionsDir)).some((name) => name.endsWith('.jsonl.zst'))).toBe(true)
    await fiber.dispose()
    await rm(h.dbFile)
    await h.mountCatalog()
    expect(ids(await h.root.sessionCatalog.search('kangaroos'))).toEqual([session.id])
    expect(statSync(h.dbFile).mode & 0o777).toBe(0o600)
  })

  it('catches up with logs written while it was not running, reading only those', async () => {
    await storeSessions()
    const first = await h.mountCatalog()
    expect((await h.root.sessionCatalog.list()).sessions).toHaveLength(5)
    await first.dispose()

    // Another run without the catalog (a headless task) adds a session and continues one.
    const p = h.root.sessionPersistence
    await p.append(
      meta('f', { cwd: '/work/b', createdAt: 9000 }),
      storedTurn(0, 9010, 'prompt about platypus', 'answer f'),
    )
    await p.append(
      meta('b', { cwd: '/work/b', createdAt: 1000 }),
      storedTurn(4, 9020, 'follow-up on echidnas', 'answer again'),
    )

    const opened: string[] = []
    const open = p.open.bind(p)
    p.open = (id) => {
      opened.push(id)
      return open(id)
    }
    await h.mountCatalog()
    const catalog = h.root.sessionCatalog
    expect(ids(await catalog.search('platypus'))).toEqual(['f'])
    expect(ids(await catalog.search('echidnas'))).toEqual(['b'])
    expect(await catalog.get('b')).toMatchObject({ userMessages: 2, assistantMessages: 2 })
    expect(ids(await catalog.search('topica'))).toEqual(['a'])
    expect(opened.sort()).toEqual(['b', 'f'])
  })

  it('opens and builds itself shortly after start, without a read', async () => {
    await storeSessions()
    await h.mountCatalog({ openDelayMs: 0 })
    await eventually(() => {
      const db = new Database(h.dbFile, { readonly: true, fileMustExist: true })
      try {
        expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
        expect((db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n).toBe(6)
      } finally {
        db.close()
      }
    })
  })

  it('drops and rebuilds a catalog of another schema version', async () => {
    await storeSessions()
    const fiber = await h.mountCatalog()
    await h.root.sessionCatalog.list()
    await fiber.dispose()
    const db = new Database(h.dbFile)
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`)
    db.exec('DELETE FROM sessions')
    db.close()
    await h.mountCatalog()
    expect(ids((await h.root.sessionCatalog.list()).sessions)).toEqual(['e', 'd', 'c', 'b', 'a'])
    expect(h.logs).toContainEqual(
      expect.stringContaining(
        `has schema version ${SCHEMA_VERSION + 1}, this dsh uses ${SCHEMA_VERSION}; rebuilding it from the session logs`,
      ),
    )
  })

  it('replaces a database file that is not SQLite', async () => {
    await storeSessions()
    await writeFile(
      h.dbFile,
      'this is not a database, just some text that is long enough to look like a header '.repeat(20),
    )
    await h.mountCatalog()
    expect((await h.root.sessionCatalog.list()).sessions).toHaveLength(5)
    expect(h.logs).toContainEqual(expect.stringContaining('is not a readable SQLite database'))
  })

  it('reindexes on demand: a corrupt log is reported and skipped, damaged lines are skipped', async () => {
    await storeSessions()
    await h.mountCatalog()
    await writeFile(path.join(h.sessionsDir, 'broken.jsonl'), 'not json at all\n{"seq":0}\n', { mode: 0o600 })
    const damaged = path.join(h.sessionsDir, 'd.jsonl')
    await writeFile(damaged, `${(await h.root.sessionPersistence.export('d' as SessionId)).trimEnd()}\n{oops\n`, {
      mode: 0o600,
    })
    const result = await h.root.sessionCatalog.reindex()
    expect(result.sessions).toBe(6)
    expect(result.ms).toBeGreaterThanOrEqual(0)
    expect(h.logs).toContainEqual(
      expect.stringMatching(/skipping session broken .*line 1: the header is not valid JSON/),
    )
    expect(h.logs).toContainEqual(
      expect.stringMatching(/session d: indexed the readable lines; skipped .*d\.jsonl:6: invalid JSON/),
    )
    expect(ids(await h.root.sessionCatalog.search('topicd'))).toEqual(['d'])
  })

  it('keeps sessions open in this process current across a reindex', async () => {
    await h.mountCatalog()
    const session = h.root.sessions.create({ cwd: '/work/a' })
    turn(session, 1, 'hello wombat', 'hi') // not written to the log yet (long batch window)
    await h.root.sessionCatalog.reindex()
    expect(ids(await h.root.sessionCatalog.search('wombat'))).toEqual([session.id])
  })

  it('stays correct when another process rebuilds the catalog under a live session', async () => {
    await storeSessions()
    await h.mountCatalog()
    const session = h.root.sessions.create({ cwd: '/work/a' })
    turn(session, 1, 'alpha question', 'alpha answer')
    await h.root.sessions.flush(session) // in the log and in the catalog

    const other = new Context()
    await other.plugin(SessionStore)
    await other.plugin(jsonl, { root: h.sessionsDir })
    await other.plugin(catalog, { path: h.dbFile })
    await other.sessionCatalog.reindex() // the live session gets another row number there
    await other.fiber.dispose()

    turn(session, 2, 'omega question', 'omega answer')
    const found = await h.root.sessionCatalog.search('omega')
    expect(ids(found)).toEqual([session.id])
    expect(ids(await h.root.sessionCatalog.search('alpha'))).toEqual([session.id])
    expect(await h.root.sessionCatalog.get(session.id)).toMatchObject({ userMessages: 2 })
    expect(ids(await h.root.sessionCatalog.search('topica'))).toEqual(['a'])
  })

  it('removes a session with its log, but not one open in this process', async () => {
    await storeSessions()
    await h.mountCatalog()
    const catalog = h.root.sessionCatalog
    await catalog.remove('b')
    expect(await catalog.get('b')).toBeUndefined()
    expect(existsSync(path.join(h.sessionsDir, 'b.jsonl'))).toBe(false)
    await expect(catalog.remove('b')).rejects.toBeInstanceOf(SessionNotFoundError)

    const open = h.root.sessions.create({ cwd: '/work/a' })
    turn(open, 1, 'still here', 'yes')
    await h.root.sessions.flush(open)
    await expect(catalog.remove(open.id)).rejects.toBeInstanceOf(SessionInUseError)
    expect(await catalog.get(open.id)).toBeDefined()
  })

  it('follows a resumed session from its stored events on', async () => {
    await storeSessions()
    await h.mountCatalog()
    const log = await h.root.sessionPersistence.open('a' as SessionId)
    const resumed = h.root.sessions.create({
      id: log.meta.id,
      cwd: log.meta.cwd,
      createdAt: log.meta.createdAt,
      seed: log.events,
      seedStored: true,
    })
    turn(resumed, 2, 'one more thing about ostriches', 'sure')
    const entry = await h.root.sessionCatalog.get('a')
    expect(entry).toMatchObject({ userMessages: 2, assistantMessages: 2 })
    expect(ids(await h.root.sessionCatalog.search('ostriches'))).toEqual(['a'])
    expect(ids(await h.root.sessionCatalog.search('topica'))).toEqual(['a'])
  })

  it('spreads long sessions over several chunks and still finds every part', async () => {
    await h.mountCatalog({ chunkChars: 300 })
    const session = h.root.sessions.create({ cwd: '/work/a' })
    for (let i = 1; i <= 12; i++) {
      turn(session, i, `question ${i} ${'filler '.repeat(20)} marker${i}`, `answer ${i}`)
      await h.root.sessions.flush(session)
    }
    for (const word of ['marker1', 'marker7', 'marker12'])
      expect(ids(await h.root.sessionCatalog.search(word))).toEqual([session.id])
    const db = new Database(h.dbFile, { readonly: true })
    try {
      expect((db.prepare('SELECT count(*) AS n FROM text_index').get() as { n: number }).n).toBeGreaterThan(3)
    } finally {
      db.close()
    }
  })

  it('goes away with its plugin: the service, the listeners and the database handle', async () => {
    const fiber = await h.mountCatalog()
    const catalog = h.root.sessionCatalog
    const session = h.root.sessions.create({ cwd: '/work/a' })
    turn(session, 1, 'before dispose', 'ok')
    await fiber.dispose()
    expect(h.root.get('sessionCatalog')).toBeUndefined()
    turn(session, 2, 'after dispose', 'ok') // no listener left to throw
    await expect(catalog.list()).rejects.toThrow('the session catalog has been disposed')
    const db = new Database(h.dbFile, { readonly: true })
    try {
      expect(db.prepare('SELECT user_messages FROM sessions').all()).toEqual([{ user_messages: 1 }])
    } finally {
      db.close()
    }
  })
})
