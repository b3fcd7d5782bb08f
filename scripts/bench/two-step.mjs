// A whole two-step headless task: the model calls `read`, then answers.
// Wall time from spawn to exit, and the process's peak RSS.
import {
  afterWarmUp,
  instantReplies,
  median,
  ms,
  row,
  rssRows,
  toolResults,
  wallRows,
  withHeadlessTask,
} from './common.mjs'

const WALL_TARGET_MS = 500
const RSS_TARGET_MIB = 100

export async function run({ runs, name }) {
  const replies = await instantReplies()
  const script = (request) =>
    toolResults(request) === 0
      ? replies.toolCalls([{ name: 'read', arguments: { file_path: 'notes.txt' } }])
      : replies.text('The file has 12 lines.')
  return withHeadlessTask(name, script, async ({ server, task }) => {
    const once = async () => {
      const result = await task('How many lines does notes.txt have?')
      const requests = server.timeline.filter((e) => e.kind === 'request').length
      if (requests !== 2) throw new Error(`expected 2 model requests, the mock got ${requests}`)
      if (!result.stdout.includes('12 lines')) throw new Error(`unexpected answer: ${JSON.stringify(result.stdout)}`)
      const first = server.timeline.find((e) => e.kind === 'request')
      const lastReply = server.timeline.findLast((e) => e.kind === 'response')
      return { ...result, toFirstRequest: first.t - result.startedAt, afterLastReply: result.endedAt - lastReply.t }
    }
    const samples = await afterWarmUp(runs, once)
    return {
      rows: [
        ...wallRows(
          samples.map((s) => s.wallMs),
          WALL_TARGET_MS,
        ),
        row('of which spawn to first request, median', ms(median(samples.map((s) => s.toFirstRequest)))),
        row('of which last reply end to exit, median', ms(median(samples.map((s) => s.afterLastReply)))),
        ...rssRows(
          samples.map((s) => s.maxRssKiB),
          RSS_TARGET_MIB,
        ),
      ],
    }
  })
}
