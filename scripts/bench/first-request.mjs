// Cold start to the first model request: from spawning
// `dsh --profile headless "task"` to the mock receiving the request.
import { instantReplies, median, ms, range, row, runDsh, sandbox, startTimedMock } from './common.mjs'

export const name = 'first-request'
export const title = 'cold start to the first model request: dsh --profile headless "task"'
export const defaultRuns = 10

const TARGET_MS = 250

export async function run({ runs }) {
  const replies = await instantReplies()
  const server = await startTimedMock(() => replies.text('Hello.'))
  const box = await sandbox(name)
  try {
    const once = async () => {
      server.timeline.length = 0
      const result = await runDsh(['--profile', 'headless', 'Say hello.'], { home: box.home, cwd: box.workspace, env: server.env })
      const first = server.timeline.find((e) => e.kind === 'request')
      if (!first) throw new Error(`dsh exited without calling the model:\n${result.stderr}`)
      return first.t - result.startedAt
    }
    await once() // creates the profile; not counted
    const samples = []
    for (let i = 0; i < runs; i++) samples.push(await once())
    const value = median(samples)
    return {
      rows: [
        row('spawn to first request, median', ms(value), `< ${TARGET_MS} ms`, value < TARGET_MS),
        row('spawn to first request, min / max', `${range(samples)} ms`),
      ],
    }
  } finally {
    await server.close()
    await box.dispose()
  }
}
