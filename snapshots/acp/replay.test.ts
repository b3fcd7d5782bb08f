// Replays every recorded ACP scenario in this folder: the mock serves the
// model responses of the recorded session log, the built dsh bin runs
// `--profile acp` driven by the ACP library's client doing the scenario's
// steps, and both the protocol transcript and the session log must equal the
// recorded ones once run-specific values are normalised.
//
// Re-record (after pnpm build) with: DSH_RECORD_ACP=1 npx vitest run snapshots/acp
// which runs the hand-written model scripts of scenarios.ts instead and
// rewrites scenario.json, session.jsonl and transcript.json.
//
// snapshots/ is not a workspace package, so the helpers are imported by path.
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { AcpTestClient, type TranscriptEntry } from '../../apps/cli/tests/support/acp.ts'
import type { MockReply } from '../../packages/test-support/llm-mock/src/index.ts'
import {
  describeRequest,
  expectedRequests,
  findSessionLogs,
  normaliseLog,
  normaliseMachineFacts,
  parseSessionLog,
  prepareRun,
  readSessionText,
  recordedHome,
  repliesFromLog,
  type Scenario,
  type SessionLog,
} from '../../packages/test-support/replay/src/index.ts'
import { useReplayMock } from '../replay-mock.ts'
import { tempDir } from '../../packages/test-support/testkit/src/index.ts'
import { type AcpScenario, SCENARIOS } from './scenarios.ts'

const here = path.dirname(fileURLToPath(import.meta.url))
const recording = process.env.DSH_RECORD_ACP === '1'

const model = useReplayMock()

interface Run {
  transcript: TranscriptEntry[]
  logText: string
  log: SessionLog
  home: string
}

/** Does the scenario's steps against a fresh dsh with `replies` queued on the mock. */
async function run(scenario: AcpScenario, replies: MockReply[], root: string): Promise<Run> {
  model.serve(replies)
  const { home, workspace } = await prepareRun(root, { files: scenario.files } as Scenario)
  const client = new AcpTestClient({
    home,
    cwd: workspace,
    env: model.env(),
    fs: scenario.fs,
  })
  for (const [name, text] of Object.entries(scenario.buffers ?? {}))
    client.buffers.set(path.join(workspace, name), text)
  let sessionId = ''
  try {
    await client.initialize()
    for (const step of scenario.steps) {
      if ('newSession' in step) sessionId = (await client.newSession()).sessionId
      else if ('setMode' in step) await client.agent.request('session/set_mode', { sessionId, modeId: step.setMode })
      else {
        client.permissionAnswers.push(...(step.permissions ?? []))
        await client.prompt(sessionId, step.prompt)
      }
    }
  } finally {
    const result = await client.close()
    expect(result.code, `stderr:\n${result.stderr}`).toBe(0)
  }
  expect(model.mock.pending).toBe(0)
  expect(model.mock.requests).toHaveLength(replies.length)
  const logs = await findSessionLogs(path.join(home, 'sessions'))
  expect(logs).toHaveLength(1)
  const logText = await readSessionText(logs[0] as string)
  const replacements: Array<[string, string]> = [
    [sessionId, '<session>'],
    [workspace, '<workspace>'],
    [home, '<home>'],
  ]
  return {
    transcript: normaliseTranscript(client.transcript, replacements),
    logText,
    log: parseSessionLog(logText),
    home,
  }
}

/**
 * The transcript without what differs from run to run: the session id and
 * paths become placeholders, the agent's version `<version>`, and consecutive
 * text chunks of one kind are joined (how a reply was split into deltas is the
 * provider's business).
 */
function normaliseTranscript(entries: TranscriptEntry[], replacements: Array<[string, string]>): TranscriptEntry[] {
  let text = JSON.stringify(entries)
  for (const [value, placeholder] of [...replacements].sort((a, b) => b[0].length - a[0].length))
    text = text.split(value).join(placeholder)
  text = normaliseMachineFacts(text)
  const out: TranscriptEntry[] = []
  for (const entry of JSON.parse(text) as TranscriptEntry[]) {
    const message = entry.message as Record<string, any>
    if (message.result?.agentInfo) message.result.agentInfo.version = '<version>'
    const update = message.method === 'session/update' ? message.params.update : undefined
    const previous = out.at(-1)?.message as Record<string, any> | undefined
    const last = previous?.method === 'session/update' ? previous.params.update : undefined
    const joinable = (u: any) =>
      (u?.sessionUpdate === 'agent_message_chunk' || u?.sessionUpdate === 'agent_thought_chunk') &&
      u.content?.type === 'text'
    if (
      joinable(update) &&
      joinable(last) &&
      last.sessionUpdate === update.sessionUpdate &&
      previous?.params.sessionId === message.params.sessionId
    ) {
      last.content.text += update.content.text
      continue
    }
    out.push(entry)
  }
  return out
}

async function folders(): Promise<string[]> {
  const names = (await readdir(here, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name)
  return names.filter((name) => existsSync(path.join(here, name, 'scenario.json'))).sort()
}

if (!recording)
  describe('recorded ACP scenarios', async () => {
    const names = await folders()

    it('has the scenarios to replay', () => {
      expect(names).toEqual(expect.arrayContaining(Object.keys(SCENARIOS)))
    })

    for (const name of names) {
      it(`replays ${name}`, { timeout: 60_000 }, async () => {
        const dir = path.join(here, name)
        const scenario = JSON.parse(await readFile(path.join(dir, 'scenario.json'), 'utf8')) as AcpScenario
        const recorded = parseSessionLog(
          await readFile(path.join(dir, 'session.jsonl'), 'utf8'),
          `${name}/session.jsonl`,
        )
        const transcript = JSON.parse(await readFile(path.join(dir, 'transcript.json'), 'utf8')) as TranscriptEntry[]
        const tmp = await tempDir('dsh-acp-replay-')
        try {
          const fresh = await run(scenario, repliesFromLog(recorded), tmp.dir)
          expect(model.mock.requests.map((request) => describeRequest(request.body))).toEqual(
            expectedRequests(recorded),
          )
          expect(fresh.transcript).toEqual(transcript)
          expect(normaliseLog(fresh.log, { home: fresh.home })).toEqual(
            normaliseLog(recorded, { home: recordedHome(recorded) }),
          )
        } finally {
          await tmp.dispose()
        }
      })
    }
  })

if (recording)
  describe('recording ACP scenarios', () => {
    for (const [name, { scenario, replies }] of Object.entries(SCENARIOS)) {
      it(`records ${name}`, { timeout: 60_000 }, async () => {
        const tmp = await tempDir('dsh-acp-record-')
        try {
          const script = replies()
          const recorded = await run(scenario, script, tmp.dir)
          // Fails here, not in the replay, when the log cannot be replayed.
          repliesFromLog(recorded.log)
          const dir = path.join(here, name)
          await mkdir(dir, { recursive: true })
          await writeFile(path.join(dir, 'scenario.json'), `${JSON.stringify(scenario, null, 2)}\n`)
          await writeFile(path.join(dir, 'session.jsonl'), recorded.logText)
          await writeFile(path.join(dir, 'transcript.json'), `${JSON.stringify(recorded.transcript, null, 2)}\n`)
        } finally {
          await tmp.dispose()
        }
      })
    }
  })
