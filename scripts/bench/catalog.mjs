// The session catalog over 10,000 stored sessions: the automatic build from
// the logs (the catalog file missing), full-text search latency over a mix of
// common, mid and rare words, list pages, and what live indexing costs the
// session's event path.
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { importLib, median, ms, percentile, range, root, row, tempDir } from './common.mjs'
import { random } from './session-log.mjs'

export const SESSIONS = 10_000
const SEARCH_TARGET_MS = 50
const FOLDERS = 25
/** Share of logs written sealed (.jsonl.zst), as closed sessions are. */
const SEALED_SHARE = 0.8

/**
 * A vocabulary of 6,000 made-up words drawn with Zipf frequencies (rank r
 * has weight 1/r), so a few words are everywhere and most are rare, as in
 * real prose.
 */
function vocabulary(rand) {
  const syllables = 'ka lo mi ne ru ta vo si pe du ga ri zo fe ba ho ly qu ne wa xi cy ju te mo'.split(' ')
  const words = new Set()
  while (words.size < 6000) {
    const n = 1 + Math.floor(rand() * 3)
    words.add(Array.from({ length: n + 1 }, () => syllables[Math.floor(rand() * syllables.length)]).join(''))
  }
  const list = [...words]
  const cumulative = []
  let sum = 0
  for (let r = 1; r <= list.length; r++) cumulative.push((sum += 1 / r))
  const draw = () => {
    const x = rand() * sum
    let lo = 0
    let hi = cumulative.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cumulative[mid] < x) lo = mid + 1
      else hi = mid
    }
    return list[lo]
  }
  return { list, draw }
}

/**
 * One session's log lines: header, then turns of a prompt, tool steps with
 * results of 0.2 to 3 KB, and an answer. Tool results are not indexed, so
 * their lines come from a pool (`fileLines`) to keep the generation quick.
 */
function sessionLog(id, index, rand, words, now, fileLines) {
  const between = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1))
  const text = (lo, hi) => Array.from({ length: between(lo, hi) }, words.draw).join(' ')
  const cwd = `/home/dev/projects/p${index % FOLDERS}`
  const createdAt = now - (SESSIONS - index) * 60_000
  const header = { type: 'session', format: 1, id, createdAt, cwd }
  if (index % 20 === 19) header.parentSession = `bench-${String(index - 1).padStart(5, '0')}`
  const lines = [JSON.stringify(header)]
  let seq = 0
  let time = createdAt
  const add = (type, data) => {
    time += between(5, 3000)
    lines.push(JSON.stringify({ seq: seq++, time, type, data }))
  }
  const message = (role, content, source) => ({ id: `m${seq}`, role, content, source })
  const model = { kind: 'model', provider: 'deepseek', model: 'deepseek-v4-flash' }
  const usage = () => ({
    inputTokens: between(500, 30000),
    outputTokens: between(20, 800),
    cacheReadTokens: between(0, 20000),
  })
  const turns = between(1, 6)
  for (let turn = 1; turn <= turns; turn++) {
    add('turn/start', { turn })
    const steps = between(0, 4)
    for (let step = 1; step <= steps + 1; step++) {
      add('step/start', { turn, step })
      if (step === 1)
        add('user/message', { message: message('user', [{ type: 'text', text: `${text(8, 60)}?` }], { kind: 'user' }) })
      if (step <= steps) {
        const callId = `call_${turn}_${step}`
        const args = JSON.stringify({ path: `src/${words.draw()}.ts` })
        add('assistant/message', {
          turn,
          step,
          message: message(
            'assistant',
            [
              { type: 'reasoning', text: text(10, 40) },
              { type: 'text', text: text(5, 25) },
              { type: 'tool-call', id: callId, name: 'read', arguments: args },
            ],
            model,
          ),
          finish: 'tool-calls',
          usage: usage(),
        })
        add('tool/call', { turn, step, callId, name: 'read', arguments: args })
        const output = Array.from(
          { length: between(4, 30) },
          (_, i) => `${String(i + 1).padStart(6)}\t${fileLines[Math.floor(rand() * fileLines.length)]}`,
        ).join('\n')
        add('tool/result', {
          turn,
          step,
          callId,
          name: 'read',
          message: message(
            'user',
            [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text: output }] }],
            { kind: 'tool', name: 'read' },
          ),
        })
      } else {
        add('assistant/message', {
          turn,
          step,
          message: message('assistant', [{ type: 'text', text: text(30, 150) }], model),
          finish: 'stop',
          usage: usage(),
        })
      }
      add('step/end', { turn, step })
    }
    add('turn/end', { turn, reason: 'completed' })
  }
  return `${lines.join('\n')}\n`
}

/** Writes the logs straight to the sessions folder, most of them sealed with zstd. */
async function writeLogs(dir, words, rand) {
  const { compress } = createRequire(path.join(root, 'packages/session/persistence-jsonl/package.json'))('zstd-napi')
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const now = Date.UTC(2026, 0, 5, 9)
  const fileLines = Array.from({ length: 2000 }, () =>
    Array.from({ length: 3 + Math.floor(rand() * 7) }, words.draw).join(' '),
  )
  let bytes = 0
  for (let i = 0; i < SESSIONS; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, SESSIONS - i) }, (_, k) => {
        const index = i + k
        const id = `bench-${String(index).padStart(5, '0')}`
        const data = Buffer.from(sessionLog(id, index, rand, words, now, fileLines))
        bytes += data.length
        const sealed = rand() < SEALED_SHARE
        const file = path.join(dir, sealed ? `${id}.jsonl.zst` : `${id}.jsonl`)
        // Dated like their events: logs of past sessions, not files written a moment ago.
        const stamp = new Date(now)
        return writeFile(file, sealed ? compress(data) : data, { mode: 0o600 }).then(() => utimes(file, stamp, stamp))
      }),
    )
  }
  return bytes
}

/** Query texts by kind: words of chosen frequency ranks, two-word queries, and a word no session holds. */
function querySet(words, rand) {
  const rank = (lo, hi) => words.list[lo + Math.floor(rand() * (hi - lo))]
  const queries = []
  for (let i = 0; i < 10; i++) queries.push({ kind: 'common word (rank < 20)', text: rank(0, 20) })
  for (let i = 0; i < 10; i++) queries.push({ kind: 'mid word (rank 100-1000)', text: rank(100, 1000) })
  for (let i = 0; i < 10; i++) queries.push({ kind: 'rare word (rank > 3000)', text: rank(3000, 6000) })
  for (let i = 0; i < 10; i++) queries.push({ kind: 'two words', text: `${rank(0, 300)} ${rank(50, 2000)}` })
  queries.push({ kind: 'no match', text: 'zzzqqqxxx' })
  return queries
}

/**
 * 50 turns of 14 events appended to a new session: the append cost per event
 * (the session's own work plus every `session/event` listener) and the time
 * `ctx.sessions.flush` takes at each turn's end (the catalog's write).
 */
async function liveTurns(ctx, words, textMessage) {
  const session = ctx.sessions.create({ cwd: '/home/dev/projects/live' })
  const appends = []
  const flushes = []
  const model = { kind: 'model', provider: 'deepseek', model: 'm' }
  const text = (n) => Array.from({ length: n }, words.draw).join(' ')
  for (let turn = 1; turn <= 50; turn++) {
    const prompt = textMessage('user', text(40), { kind: 'user' })
    const replies = Array.from({ length: 4 }, () => textMessage('assistant', text(60), model))
    const started = performance.now()
    session.append('turn/start', { turn })
    session.append('user/message', { message: prompt })
    for (let step = 1; step <= 4; step++) {
      session.append('step/start', { turn, step })
      session.append('assistant/message', { turn, step, message: replies[step - 1], finish: 'stop' })
      session.append('step/end', { turn, step })
    }
    appends.push((performance.now() - started) / 14)
    const flushed = performance.now()
    await ctx.sessions.flush(session)
    flushes.push(performance.now() - flushed)
    session.append('turn/end', { turn, reason: 'completed' })
  }
  await ctx.sessions.close(session)
  return { appends, flushes }
}

export async function run({ runs, name }) {
  const { Context } = await importLib('packages/boot/cordis/lib/index.js')
  const { SessionStore, textMessage } = await importLib('packages/core/session/lib/index.js')
  const jsonl = await importLib('packages/session/persistence-jsonl/lib/index.js')
  const catalog = await importLib('packages/session/catalog/lib/index.js')
  const box = await tempDir(name)
  const ctx = new Context()
  try {
    const rand = random(7)
    const words = vocabulary(rand)
    const sessionsDir = path.join(box.dir, 'sessions')
    const generated = performance.now()
    const bytes = await writeLogs(sessionsDir, words, rand)
    const generateMs = performance.now() - generated

    await ctx.plugin(SessionStore)
    await ctx.plugin(jsonl, { root: sessionsDir })
    const withoutCatalog = await liveTurns(ctx, words, textMessage)
    // The catalog file is missing: mounting starts the build from the logs; the first read waits for it.
    const buildStarted = performance.now()
    const catalogFiber = ctx.plugin(catalog, { path: path.join(box.dir, 'catalog.sqlite') })
    await catalogFiber
    const firstPage = await ctx.sessionCatalog.list({ includeChildren: true, limit: 1 })
    const buildMs = performance.now() - buildStarted
    const indexed = (await ctx.sessionCatalog.list({ includeChildren: true, limit: 1000 })).sessions.length
    if (!firstPage.sessions.length || indexed < 1000)
      throw new Error(`the catalog holds ${indexed} sessions after the build`)

    const queries = querySet(words, random(11))
    const byKind = new Map()
    const all = []
    let hits = 0
    for (const q of queries) await ctx.sessionCatalog.search(q.text) // warm-up, not counted
    for (let r = 0; r < runs; r++) {
      for (const q of queries) {
        const started = performance.now()
        const found = await ctx.sessionCatalog.search(q.text, { limit: 20 })
        const took = performance.now() - started
        hits += found.length
        all.push(took)
        byKind.set(q.kind, [...(byKind.get(q.kind) ?? []), took])
      }
    }
    const lists = []
    const filtered = []
    for (let r = 0; r < runs * 10; r++) {
      let started = performance.now()
      await ctx.sessionCatalog.list({ limit: 50 })
      lists.push(performance.now() - started)
      started = performance.now()
      await ctx.sessionCatalog.list({ cwd: `/home/dev/projects/p${r % FOLDERS}`, limit: 50 })
      filtered.push(performance.now() - started)
    }

    // Opening a built catalog catches up with the logs changed since: none, then ten touched by another run.
    await catalogFiber.dispose()
    const reopen = async () => {
      const started = performance.now()
      const fiber = ctx.plugin(catalog, { path: path.join(box.dir, 'catalog.sqlite') })
      await fiber
      await ctx.sessionCatalog.list({ limit: 1 })
      return { fiber, ms: performance.now() - started }
    }
    const unchanged = await reopen()
    await unchanged.fiber.dispose()
    const now = new Date()
    for (const file of (await readdir(sessionsDir)).slice(0, 10)) await utimes(path.join(sessionsDir, file), now, now)
    const tenChanged = await reopen()

    // Live indexing: appending events to an open session, and the write at each turn end.
    const live = await liveTurns(ctx, words, textMessage)

    const searchMs = median(all)
    const kindRows = [...byKind].map(([kind, samples]) => row(`search, ${kind}, median`, ms(median(samples))))
    return {
      rows: [
        row(`build from ${SESSIONS.toLocaleString('en')} logs (catalog missing)`, ms(buildMs)),
        row(
          'open of the built catalog to its first read, no log changed / 10 logs changed',
          `${unchanged.ms.toFixed(1)} / ${tenChanged.ms.toFixed(1)} ms`,
        ),
        row('search, median of all queries', ms(searchMs), `< ${SEARCH_TARGET_MS} ms`, searchMs < SEARCH_TARGET_MS),
        row('search, p90 / max', `${percentile(all, 90).toFixed(1)} / ${Math.max(...all).toFixed(1)} ms`),
        ...kindRows,
        row('list, first page of 50, median', ms(median(lists))),
        row('list, one folder, page of 50, median', ms(median(filtered))),
        row(
          'live: session.append per event, without / with the catalog',
          `${(median(withoutCatalog.appends) * 1000).toFixed(1)} / ${(median(live.appends) * 1000).toFixed(1)} µs`,
        ),
        row(
          'live: catalog write of one turn (14 events), median / max',
          `${median(live.flushes).toFixed(2)} / ${Math.max(...live.flushes).toFixed(2)} ms`,
        ),
      ],
      note: `${SESSIONS} logs, ${(bytes / 1e6).toFixed(0)} MB plain (${Math.round(SEALED_SHARE * 100)}% sealed), written in ${(generateMs / 1000).toFixed(1)} s; ${all.length} searches (${queries.length} queries x ${runs}), ${(hits / all.length).toFixed(1)} hits each on average (limit 20); search min / max ${range(all)} ms`,
    }
  } finally {
    await ctx.fiber.dispose()
    await box.dispose()
  }
}
