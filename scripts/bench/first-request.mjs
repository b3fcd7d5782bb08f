// Cold start to the first model request: from spawning
// `dsh --profile headless "task"` to the mock receiving the request.
import { spawnSync } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { afterWarmUp, childEnv, instantReplies, median, ms, range, row, runDsh, withHeadlessTask } from './common.mjs'

const TARGET_MS = 250

export async function run({ runs, name }) {
  const replies = await instantReplies()
  return withHeadlessTask(
    name,
    () => replies.text('Hello.'),
    async ({ server, box, task }) => {
      const once = async () => {
        const result = await task('Say hello.')
        const first = server.timeline.find((e) => e.kind === 'request')
        if (!first) throw new Error(`dsh exited without calling the model:\n${result.stderr}`)
        return { wall: first.t - result.startedAt, marks: result.marks }
      }
      const samples = await afterWarmUp(runs, once)
      const walls = samples.map((s) => s.wall)
      const value = median(walls)
      const prefix = await sharedPrefix(server, box)
      return {
        rows: [
          row('spawn to first request, median', ms(value), `< ${TARGET_MS} ms`, value < TARGET_MS),
          row('spawn to first request, min / max', `${range(walls)} ms`),
          ...phaseRows(samples.map((s) => s.marks)),
          ...nodeFloorRows(runs),
          row(
            'first request, body size',
            `${(prefix.size / 1024).toFixed(1)} KiB`,
            '< 24 KiB',
            prefix.size < 24 * 1024,
          ),
          row(
            '  shared by two sessions in different folders',
            `${(prefix.shared / 1024).toFixed(1)} KiB (${((100 * prefix.shared) / prefix.model).toFixed(1)}% of the model's input)`,
          ),
        ],
      }
    },
  )
}

/**
 * The first request of two sessions started in two different folders: its
 * body size, and how much of what the model reads (the tools, then the
 * messages from the system prompt on) the two have in common from the start,
 * which is what the provider's prefix cache can reuse between them.
 */
async function sharedPrefix(server, box) {
  const bodies = []
  for (const folder of ['project-one', 'another-project']) {
    const cwd = path.join(box.workspace, folder)
    await mkdir(cwd, { recursive: true })
    const before = server.mock.requests.length
    await runDsh(['--profile', 'headless', 'Say hello.'], { home: box.home, cwd, env: server.env })
    const request = server.mock.requests[before]
    if (!request) throw new Error(`dsh in ${folder} did not call the model`)
    bodies.push(request)
  }
  const modelInput = (request) => JSON.stringify(request.body.tools ?? []) + JSON.stringify(request.body.messages)
  const [a, b] = bodies.map(modelInput)
  let shared = 0
  while (shared < a.length && a[shared] === b[shared]) shared++
  return { size: Buffer.byteLength(bodies[0].rawBody), model: a.length, shared }
}

/**
 * Where a start goes, from the probe's marks in the dsh process (medians of
 * each phase, so they need not add up to the median above; the launcher
 * script and the spawn itself come on top).
 */
function phaseRows(marks) {
  const phase = (from, to) => ms(median(marks.map((m) => m[to] - (from ? m[from] : 0))))
  return [
    row('  Node until V8 starts (options, certificates)', phase(undefined, 'v8StartMs')),
    row("  reading the snapshot, V8's heap", phase('v8StartMs', 'environmentMs')),
    row("  the snapshot's context, Node's preparation", phase('environmentMs', 'codeStartMs')),
    row("  dsh's code, to the request", phase('codeStartMs', 'firstRequestMs')),
  ]
}

/** Median wall time of `node -e 0` with the children's environment: what Node itself costs before any dsh code. */
function nodeAlone(runs, env) {
  const walls = []
  for (let i = 0; i <= runs; i++) {
    const started = performance.now()
    const result = spawnSync(process.execPath, ['-e', '0'], { env, stdio: 'ignore' })
    if (result.status !== 0) throw new Error(`node -e 0 exited ${result.status ?? result.signal}`)
    if (i > 0) walls.push(performance.now() - started)
  }
  return median(walls)
}

/**
 * Context for the figure: Node's own start on this machine. A set
 * NODE_EXTRA_CA_CERTS makes Node parse its bundled root certificates and
 * that file at every start, before any JavaScript runs.
 */
function nodeFloorRows(runs) {
  const env = childEnv({})
  const rows = [row('node -e 0 alone, median', ms(nodeAlone(runs, env)))]
  if (env.NODE_EXTRA_CA_CERTS) {
    const { NODE_EXTRA_CA_CERTS: _, ...without } = env
    rows.push(row('node -e 0 without NODE_EXTRA_CA_CERTS, median', ms(nodeAlone(runs, without))))
  }
  return rows
}
