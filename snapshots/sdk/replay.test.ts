// Replays every recorded SDK transcript in this folder: the mock serves the
// model responses of the recorded session log, the test writes what the
// recorded client wrote (placeholders filled in) to a fresh `dsh --profile
// sdk`, and what dsh prints must equal the recording once normalised.
//
// DSH_RECORD_SDK=1 re-records from scenarios.ts instead (see snapshots/README.md).
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { type RpcMessage, SdkWire } from '../../apps/cli/tests/support/sdk-wire.ts'
import type { MockReply } from '../../packages/test-support/llm-mock/src/index.ts'
import {
  describeRequest,
  expectedRequests,
  findSessionLogs,
  parseSessionLog,
  prepareRun,
  readSessionText,
  repliesFromLog,
  SESSION_FILE,
  type SessionLog,
} from '../../packages/test-support/replay/src/index.ts'
import { useReplayMock } from '../replay-mock.ts'
import { tempDir } from '../../packages/test-support/testkit/src/index.ts'
import { SCENARIOS, type ScenarioScript } from './scenarios.ts'
import {
  formatTranscript,
  Normaliser,
  parseTranscript,
  replayTranscript,
  serverSide,
  transcriptOf,
} from './transcript.ts'

const here = path.dirname(fileURLToPath(import.meta.url))
const TRANSCRIPT_FILE = 'transcript.jsonl'
const recording = process.env.DSH_RECORD_SDK === '1'

const model = useReplayMock()

interface Run {
  wire: SdkWire
  normaliser: Normaliser
  home: string
  workspace: string
  dispose: () => Promise<void>
}

/** A fresh home and workspace (with `files`) and `dsh --profile sdk` running in it against the mock. */
async function start(replies: MockReply[], files?: Record<string, string>): Promise<Run> {
  model.serve(replies)
  const tmp = await tempDir('dsh-sdk-replay-')
  const { home, workspace } = await prepareRun(tmp.dir, { task: 'sdk', exitCode: 0, ...(files ? { files } : {}) })
  const wire = new SdkWire(['--profile', 'sdk'], {
    home,
    cwd: workspace,
    env: model.env(),
  })
  return { wire, normaliser: new Normaliser({ workspace, home }), home, workspace, dispose: tmp.dispose }
}

async function onlyLog(home: string): Promise<string | undefined> {
  const files = await findSessionLogs(path.join(home, 'sessions'))
  if (files.length > 1) throw new Error(`a scenario may use one session, this one used ${files.length}`)
  return files[0] ? readSessionText(files[0]) : undefined
}

/** Runs a scenario's steps as a client would, answering the server's requests from `answers`. */
async function drive(script: ScenarioScript, replies: MockReply[]) {
  const run = await start(replies, script.files)
  const answers = Object.fromEntries(Object.entries(script.answers ?? {}).map(([method, list]) => [method, [...list]]))
  run.wire.answer = (request: RpcMessage) => answers[request.method]?.shift()
  try {
    for (const step of script.steps) {
      if ('raw' in step) {
        const count = run.wire.received.length
        run.wire.sendRaw(step.raw)
        await run.wire.waitFor(() => run.wire.received.length > count, `the answer to ${step.raw}`)
        continue
      }
      await run.wire.request(step.request, step.params === undefined ? undefined : run.normaliser.in(step.params))
      // Placeholders of later steps refer to ids this answer introduced.
      for (const message of run.wire.received) run.normaliser.out(message)
    }
    const exit = await run.wire.exited
    const problems = [
      model.mock.pending > 0 ? `${model.mock.pending} replies unused` : '',
      model.mock.requests.length !== replies.length
        ? `${model.mock.requests.length} requests for ${replies.length} replies`
        : '',
    ]
    if (problems.some(Boolean)) throw new Error(`${problems.filter(Boolean).join('; ')}\nstderr:\n${exit.stderr}`)
    const fresh = new Normaliser({ workspace: run.workspace, home: run.home })
    return { transcript: transcriptOf(run.wire.entries, exit, fresh), log: await onlyLog(run.home) }
  } finally {
    await run.dispose()
  }
}

/**
 * Records a scenario in two passes: the first with the hand-written replies
 * gives the session log; the second serves that log's replies, as a replay
 * will, so the transcript streams exactly as the replay does.
 */
async function record(name: string, script: ScenarioScript): Promise<void> {
  const first = await drive(script, script.replies())
  const replies = first.log ? repliesFromLog(parseSessionLog(first.log)) : []
  const second = await drive(script, replies)
  const dir = path.join(here, name)
  await mkdir(dir, { recursive: true })
  const scenario = { description: script.description, ...(script.files ? { files: script.files } : {}) }
  await writeFile(path.join(dir, 'scenario.json'), `${JSON.stringify(scenario, null, 2)}\n`)
  await writeFile(path.join(dir, TRANSCRIPT_FILE), formatTranscript(second.transcript))
  if (second.log) await writeFile(path.join(dir, SESSION_FILE), second.log)
  else await rm(path.join(dir, SESSION_FILE), { force: true })
}

/** The scenario folders: those holding a transcript. */
async function recorded(): Promise<string[]> {
  const entries = await readdir(here, { withFileTypes: true })
  return entries
    .filter((e) => e.isDirectory() && existsSync(path.join(here, e.name, TRANSCRIPT_FILE)))
    .map((e) => e.name)
    .sort()
}

async function replay(name: string): Promise<void> {
  const dir = path.join(here, name)
  const transcript = parseTranscript(await readFile(path.join(dir, TRANSCRIPT_FILE), 'utf8'))
  const scenario = JSON.parse(await readFile(path.join(dir, 'scenario.json'), 'utf8')) as {
    files?: Record<string, string>
  }
  const logFile = path.join(dir, SESSION_FILE)
  const log: SessionLog | undefined = existsSync(logFile)
    ? parseSessionLog(await readFile(logFile, 'utf8'), logFile)
    : undefined
  const replies = log ? repliesFromLog(log) : []
  const run = await start(replies, scenario.files)
  try {
    const got = await replayTranscript(run.wire, transcript, run.normaliser)
    expect(got).toEqual(serverSide(transcript))
    expect(model.mock.pending).toBe(0)
    if (log) expect(model.mock.requests.map((request) => describeRequest(request.body))).toEqual(expectedRequests(log))
  } finally {
    await run.dispose()
  }
}

if (recording) {
  describe('recording SDK transcripts', () => {
    for (const [name, script] of Object.entries(SCENARIOS)) it(`records ${name}`, () => record(name, script), 60_000)
  })
} else {
  const names = await recorded()
  describe('recorded SDK transcripts', () => {
    it('has the transcripts to replay', () => {
      expect(names).toEqual(expect.arrayContaining(['prompt-bash', 'approval-write', 'bad-input']))
    })
    for (const name of names) it(`replays ${name}`, () => replay(name), 60_000)
  })
}
