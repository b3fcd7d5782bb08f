// Opening a long session: a 10,000-event log written through the real JSONL
// provider, then `open()` timed in this process (plain and sealed), and a
// cold `dsh --profile headless --resume <id> "task"` timed to its first model
// request.
import { randomUUID } from 'node:crypto'
import { readFile, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { importLib, instantReplies, median, ms, range, row, runDsh, sandbox, startTimedMock } from './common.mjs'
import { sessionEvents } from './session-log.mjs'

export const EVENTS = 10_000
/** Events per `append` while writing the log (the writer appends per turn or per 200 ms window; the bytes are the same). */
const BATCH = 1000
const OPEN_TARGET_MS = 200

const mb = (bytes) => `${(bytes / 1e6).toFixed(2)} MB`

/** Median and first-call time of `open(id)`, checking that every event comes back. */
async function timeOpen(persistence, id, runs) {
  const samples = []
  for (let i = 0; i <= runs; i++) {
    const started = performance.now()
    const log = await persistence.open(id)
    samples.push(performance.now() - started)
    if (log.events.length !== EVENTS || log.problems.length) {
      throw new Error(
        `open(${id}) returned ${log.events.length} events and ${log.problems.length} problem(s), expected ${EVENTS} and none`,
      )
    }
  }
  return { first: samples[0], later: samples.slice(1) }
}

export async function run({ runs, name }) {
  const { Context } = await importLib('packages/boot/cordis/lib/index.js')
  const jsonl = await importLib('packages/session/persistence-jsonl/lib/index.js')
  const box = await sandbox(name)
  const sessions = path.join(box.home, 'sessions')
  const ctx = new Context()
  let closed = false
  const closeProvider = async () => {
    if (!closed) await ctx.fiber.dispose()
    closed = true
  }
  const replies = await instantReplies()
  const server = await startTimedMock(() => replies.text('Done.'))
  try {
    // Write the log the way dsh does: through the provider, then sealed when the session closes.
    await ctx.plugin(jsonl, { root: sessions })
    const persistence = ctx.sessionPersistence
    const id = `session-${randomUUID()}`
    const events = sessionEvents({ count: EVENTS, cwd: box.workspace })
    const meta = { id, createdAt: events[0].time, cwd: box.workspace }
    for (let i = 0; i < events.length; i += BATCH) await persistence.append(meta, events.slice(i, i + BATCH))
    const plainBytes = (await stat(persistence.plainPath(id))).size

    const plain = await timeOpen(persistence, id, runs)
    await persistence.seal(id)
    const sealedFile = persistence.sealedPath(id)
    const sealedData = await readFile(sealedFile)
    const sealed = await timeOpen(persistence, id, runs)
    await closeProvider()

    // A cold resume of that session, restored to its sealed state before every run.
    const restore = async () => {
      await rm(persistence.plainPath(id), { force: true })
      await writeFile(sealedFile, sealedData, { mode: 0o600 })
    }
    let request
    const resume = async () => {
      await restore()
      server.timeline.length = 0
      server.mock.reset()
      const result = await runDsh(['--profile', 'headless', '--resume', id, 'One more thing.'], {
        home: box.home,
        cwd: box.workspace,
        env: server.env,
      })
      const first = server.timeline.find((e) => e.kind === 'request')
      if (!first) throw new Error(`dsh --resume exited without calling the model:\n${result.stderr}`)
      request = server.mock.requests[0]
      return first.t - result.startedAt
    }
    await resume() // creates the profile; not counted
    const resumes = []
    for (let i = 0; i < runs; i++) resumes.push(await resume())
    const messages = request?.body?.messages?.length ?? 0

    const plainMs = median(plain.later)
    const sealedMs = median(sealed.later)
    return {
      rows: [
        row('open(), plain .jsonl, median', ms(plainMs), `< ${OPEN_TARGET_MS} ms`, plainMs < OPEN_TARGET_MS),
        row('open(), sealed .jsonl.zst, median', ms(sealedMs), `< ${OPEN_TARGET_MS} ms`, sealedMs < OPEN_TARGET_MS),
        row('open(), first call (plain / sealed)', `${plain.first.toFixed(1)} / ${sealed.first.toFixed(1)} ms`),
        row('--resume: spawn to first request, median', ms(median(resumes))),
        row('--resume: spawn to first request, min / max', `${range(resumes)} ms`),
      ],
      note: `log: ${EVENTS} events, ${mb(plainBytes)} plain, ${mb(sealedData.length)} sealed; the resumed request carries ${messages} messages (${mb(request?.rawBody.length ?? 0)})`,
    }
  } finally {
    await closeProvider()
    await server.close()
    await box.dispose()
  }
}
