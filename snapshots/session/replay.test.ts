// Replays every recorded headless scenario in this folder: the mock serves the
// model responses of the recorded session log, the built dsh bin runs the
// recorded task in a fresh workspace, and the new log must equal the recorded
// one once run-specific values (times, ids, temp paths) are normalised.
// Re-record with `node scripts/record-scenario.mjs` (see snapshots/README.md).
//
// snapshots/ is not a workspace package, so the helpers are imported by path.
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  describeRequest,
  expectedRequests,
  findSessionLogs,
  listScenarios,
  normaliseLog,
  prepareRun,
  readScenario,
  readSessionLog,
  recordedHome,
  repliesFromLog,
  scenarioArgs,
} from '../../packages/test-support/replay/src/index.ts'
import { useReplayMock } from '../replay-mock.ts'
import { runDsh, tempDir } from '../../packages/test-support/testkit/src/index.ts'

const here = path.dirname(fileURLToPath(import.meta.url))
const folders = await Promise.all((await listScenarios(here)).map(readScenario))

const model = useReplayMock()

describe('recorded headless scenarios', () => {
  it('has the scenarios to replay', () => {
    expect(folders.map((f) => f.name)).toEqual(
      expect.arrayContaining(['write-file', 'bash-read-edit', 'retry-two-tools']),
    )
  })

  for (const { name, scenario, log } of folders) {
    it(`replays ${name}`, async () => {
      const replies = repliesFromLog(log)
      model.serve(replies)
      const tmp = await tempDir('dsh-replay-')
      try {
        const { home, workspace } = await prepareRun(tmp.dir, scenario)
        const result = await runDsh(scenarioArgs(scenario), {
          home,
          cwd: workspace,
          env: model.env(),
        })
        expect(result.code, `stderr:\n${result.stderr}`).toBe(scenario.exitCode)
        if (scenario.stdout !== undefined) expect(result.stdout).toBe(scenario.stdout)

        // The model saw what the recorded log says it saw, once per recorded reply.
        expect(model.mock.pending).toBe(0)
        expect(model.mock.requests).toHaveLength(replies.length)
        expect(model.mock.requests.map((request) => describeRequest(request.body))).toEqual(expectedRequests(log))

        const files = await findSessionLogs(path.join(home, 'sessions'))
        expect(files).toHaveLength(1)
        const fresh = await readSessionLog(files[0] as string)
        expect(fresh.header.cwd).toBe(workspace)
        expect(normaliseLog(fresh, { home })).toEqual(normaliseLog(log, { home: recordedHome(log) }))
      } finally {
        await tmp.dispose()
      }
    })
  }
})
