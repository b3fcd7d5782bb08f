// Harness time per step: the model asks for a cheap tool call (`read` of a
// small file) K times, then answers. Per step, the time from the mock ending
// its reply to the mock receiving the next request: the harness parsing the
// stream, logging, running the tool and building the next request.
import { afterWarmUp, instantReplies, median, ms, percentile, row, toolResults, withHeadlessTask } from './common.mjs'

/** Tool steps per task. */
export const STEPS = 20
const TARGET_MS = 10

export async function run({ runs, name }) {
  const replies = await instantReplies()
  const script = (request) =>
    toolResults(request) < STEPS
      ? replies.toolCalls([{ name: 'read', arguments: { file_path: 'notes.txt' } }])
      : replies.text('Read it.')
  return withHeadlessTask(name, script, async ({ server, task }) => {
    const once = async () => {
      await task('Read notes.txt again and again.')
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
    const perRun = await afterWarmUp(runs, once)
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
  })
}
