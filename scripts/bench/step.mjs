// Harness time per step: the model asks for a cheap tool call (`read` of a
// small file) K times, then answers. Per step, the time from the mock ending
// its reply to the mock receiving the next request: the harness parsing the
// stream, logging, running the tool and building the next request.
import { instantReplies, median, ms, percentile, row, runDsh, sandbox, startTimedMock, toolResults } from './common.mjs'

export const name = 'step'
export const title = 'harness time per step: reply end to next request, read tool'
export const defaultRuns = 3

/** Tool steps per task. */
export const STEPS = 20
const TARGET_MS = 10

export async function run({ runs }) {
  const replies = await instantReplies()
  const server = await startTimedMock((request) =>
    toolResults(request) < STEPS
      ? replies.toolCalls([{ name: 'read', arguments: { file_path: 'notes.txt' } }])
      : replies.text('Read it.'),
  )
  const box = await sandbox(name)
  try {
    const once = async () => {
      server.timeline.length = 0
      await runDsh(['--profile', 'headless', 'Read notes.txt again and again.'], {
        home: box.home,
        cwd: box.workspace,
        env: server.env,
      })
      const events = [...server.timeline]
      const requests = events.filter((e) => e.kind === 'request')
      if (requests.length !== STEPS + 1)
        throw new Error(`expected ${STEPS + 1} model requests, the mock got ${requests.length}`)
      // Requests are sequential: request i, its reply ends, request i+1.
      const gaps = []
      for (let i = 0; i < events.length - 1; i++) {
        if (events[i].kind === 'response' && events[i + 1].kind === 'request') gaps.push(events[i + 1].t - events[i].t)
      }
      return gaps
    }
    await once() // creates the profile; not counted
    const perRun = []
    for (let i = 0; i < runs; i++) perRun.push(await once())
    const all = perRun.flat()
    const firsts = perRun.map((gaps) => gaps[0])
    const rest = perRun.flatMap((gaps) => gaps.slice(1))
    const value = median(all)
    return {
      rows: [
        row(`per step, median of ${all.length}`, ms(value), `< ${TARGET_MS} ms`, value < TARGET_MS),
        row('per step, p90 / max', `${percentile(all, 90).toFixed(1)} / ${Math.max(...all).toFixed(1)} ms`),
        row('first step of a run, median', ms(median(firsts))),
        row('later steps, median', ms(median(rest))),
      ],
      note: `${runs} run(s) of ${STEPS} tool steps plus a text answer`,
    }
  } finally {
    await server.close()
    await box.dispose()
  }
}
