// The SDK surface: `dsh --profile sdk` driven by the TypeScript client
// (@dsh/sdk-client, built lib) against the instant mock. Two benchmarks:
// the round trip of a prompt, and how many events per second reach a client.
import {
  childEnv,
  dshCommand,
  importLib,
  median,
  ms,
  percentile,
  range,
  row,
  sandbox,
  startTimedMock,
} from './common.mjs'

/** A client on a fresh `dsh --profile sdk` (started as the other benchmarks start dsh) in the sandbox; resolves once `initialize` was answered. */
async function connect(box, env) {
  const { DshClient } = await importLib('packages/sdk/client/lib/index.js')
  const [command, args, launcherEnv] = dshCommand(['--profile', 'sdk'])
  return DshClient.spawn({
    command,
    args,
    cwd: box.workspace,
    env: childEnv({ DSH_HOME: box.home, ...launcherEnv, ...env }),
  })
}

const ROUND_TRIP_TARGET_MS = 15

export const roundTrip = {
  name: 'sdk-round-trip',
  title: 'SDK prompt round trip: session/prompt sent to its result received, instant one-step reply',
  defaultRuns: 50,
  async run({ runs }) {
    const { reply } = await importLib('packages/test-support/llm-mock/lib/index.js')
    const server = await startTimedMock(reply.text('ok', { keepAlive: false, chunkSize: 1000, usage: null }))
    const box = await sandbox('sdk-round-trip')
    const t0 = performance.now()
    const client = await connect(box, server.env)
    const ready = performance.now() - t0
    try {
      const session = await client.newSession()
      const once = async () => {
        const start = performance.now()
        const result = await session.prompt('Say ok.')
        if (result.text !== 'ok') throw new Error(`unexpected answer: ${JSON.stringify(result)}`)
        return performance.now() - start
      }
      const first = await once()
      const samples = []
      for (let i = 0; i < runs; i++) samples.push(await once())
      const value = median(samples)
      return {
        rows: [
          row('round trip, median', ms(value), `< ${ROUND_TRIP_TARGET_MS} ms`, value < ROUND_TRIP_TARGET_MS),
          row('round trip, p90', ms(percentile(samples, 90))),
          row('round trip, min / max', `${range(samples)} ms`),
          row('first prompt of the session', ms(first)),
          row('spawn to initialize answered', ms(ready)),
        ],
        note: 'one session; each prompt is a turn of one model request, logged and flushed',
      }
    } finally {
      await client.close()
      await server.close()
      await box.dispose()
    }
  },
}

const EVENTS_TARGET_PER_S = 20_000
const DELTAS = 20_000

export const eventRate = {
  name: 'sdk-events',
  title: `SDK events per second: a reply of ${DELTAS} deltas streamed to a client`,
  defaultRuns: 3,
  async run({ runs }) {
    const { reply } = await importLib('packages/test-support/llm-mock/lib/index.js')
    const server = await startTimedMock(
      reply.text('ab'.repeat(DELTAS), { keepAlive: false, chunkSize: 2, usage: null }),
    )
    const box = await sandbox('sdk-events')
    const client = await connect(box, server.env)
    try {
      const once = async () => {
        const session = await client.newSession()
        let count = 0
        let first
        let last
        const reading = (async () => {
          for await (const update of session.events()) {
            last = performance.now()
            first ??= last
            count++
            if (update.type === 'status' && update.status === 'idle') break
          }
        })()
        await session.prompt('Stream a lot.')
        await reading
        const seconds = (last - first) / 1000
        return { count, rate: count / seconds }
      }
      await once()
      const samples = []
      for (let i = 0; i < runs; i++) samples.push(await once())
      const value = median(samples.map((s) => s.rate))
      return {
        rows: [
          row(
            'notifications per second, median',
            `${Math.round(value)} /s`,
            `> ${EVENTS_TARGET_PER_S} /s`,
            value > EVENTS_TARGET_PER_S,
          ),
          row('notifications per run', String(samples[0].count)),
        ],
        note: 'from the first notification of a prompt to its idle status, as read by the client',
      }
    } finally {
      await client.close()
      await server.close()
      await box.dispose()
    }
  },
}
