#!/usr/bin/env node
// Records the headless scenarios replayed by snapshots/session/replay.test.ts.
// Each scenario below is a task, the files its workspace starts with, and a
// hand-written script of model replies. The recorder runs the built dsh bin
// against the mock server with that script, checks the run ended as expected,
// and writes snapshots/session/<name>/scenario.json and session.jsonl (the
// session log, decompressed when it was sealed).
//
// Usage: pnpm build && node scripts/record-scenario.mjs [name...]   (no name: all)
//        node scripts/record-scenario.mjs --list
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const snapshots = path.join(root, 'snapshots/session')

async function load(relative) {
  const file = path.join(root, relative)
  if (!existsSync(file)) {
    console.error(`record-scenario: ${relative} is missing: run pnpm build first`)
    process.exit(1)
  }
  return import(pathToFileURL(file).href)
}

const { reply, startMockLlm } = await load('packages/test-support/llm-mock/lib/index.js')
const { runDsh, tempDir } = await load('packages/test-support/testkit/lib/index.js')
const replay = await load('packages/test-support/replay/lib/index.js')

// The DeepSeek route's retry policy with no backoff and no jitter, so the
// llm/retry delay of a dropped connection is the same on every run.
const NO_BACKOFF = `- id: llm-deepseek
  config:
    retry:
      initialDelayMs: 0
      jitterRatio: 0
`

/**
 * name → { scenario (task, args, files, exitCode), replies (the model's side) }.
 * Commands and files must give the same output on every run: no dates,
 * random names, absolute paths outside the workspace, or directory listings
 * that depend on the machine.
 */
const SCENARIOS = {
  'write-file': {
    scenario: {
      task: 'Create greeting.txt saying hello, then tell me what you wrote.',
      exitCode: 0,
    },
    replies: () => [
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'greeting.txt', content: 'Hello from dsh!\n' } }], {
        reasoning: 'The user wants a new file. The write tool creates it.',
        usage: { promptCacheHitTokens: 0, promptCacheMissTokens: 905, completionTokens: 41, reasoningTokens: 12 },
      }),
      reply.text('I created greeting.txt with the line "Hello from dsh!".', {
        usage: { promptCacheHitTokens: 896, promptCacheMissTokens: 71, completionTokens: 15, reasoningTokens: 0 },
      }),
    ],
  },

  'bash-read-edit': {
    scenario: {
      task: 'How many lines does app.cfg have? Then bump its version to 2.',
      files: { 'app.cfg': 'name = demo\nversion = 1\ndebug = false\n' },
      exitCode: 0,
    },
    replies: () => [
      reply.toolCalls(
        [
          {
            name: 'bash',
            arguments: {
              command: 'wc -l < app.cfg',
              description: 'Count the lines of app.cfg',
            },
          },
        ],
        {
          reasoning: 'Count the lines with wc first.',
        },
      ),
      reply.toolCalls([{ name: 'read', arguments: { file_path: 'app.cfg' } }], {
        content: 'app.cfg has 3 lines. I will read it before editing.',
      }),
      reply.toolCalls(
        [{ name: 'edit', arguments: { file_path: 'app.cfg', old_string: 'version = 1', new_string: 'version = 2' } }],
        {
          reasoning: 'Line 2 holds the version.',
        },
      ),
      reply.text('app.cfg has 3 lines, and its version is now 2.', { reasoning: 'The edit went through.' }),
    ],
  },

  'retry-two-tools': {
    scenario: {
      task: 'Who is the oldest person in names.txt, according to ages.txt?',
      files: { 'names.txt': 'carol\nalice\nbob\n', 'ages.txt': 'alice 31\nbob 27\ncarol 45\n' },
      exitCode: 0,
    },
    replies: () => [
      reply.error(503, { retryAfter: 0 }),
      reply.toolCalls(
        [
          { name: 'read', arguments: { file_path: 'names.txt' } },
          { name: 'read', arguments: { file_path: 'ages.txt' } },
        ],
        {
          reasoning: 'Both files are needed; read them together.',
          usage: { promptCacheHitTokens: 0, promptCacheMissTokens: 920, completionTokens: 48, reasoningTokens: 10 },
        },
      ),
      reply.text('carol is the oldest, at 45.', {
        usage: { promptCacheHitTokens: 896, promptCacheMissTokens: 120, completionTokens: 9, reasoningTokens: 0 },
      }),
    ],
  },

  // A connection dropped before the first byte, then a reply with nothing
  // in it: both are retried (without backoff, see NO_BACKOFF).
  'flaky-provider': {
    scenario: {
      task: 'Say hello.',
      args: ['--patch', 'no-backoff.yml'],
      files: { 'no-backoff.yml': NO_BACKOFF },
      exitCode: 0,
    },
    replies: () => [reply.cut(0, reply.empty()), reply.empty(), reply.text('Hello!')],
  },

  'max-tokens': {
    scenario: {
      task: 'Write a very long poem about the sea.',
      exitCode: 1,
    },
    replies: () => [
      reply.text('The sea rolls in, the sea rolls out, and', {
        reasoning: 'A long poem it is.',
        finishReason: 'length',
        usage: { promptCacheHitTokens: 0, promptCacheMissTokens: 880, completionTokens: 8192, reasoningTokens: 5 },
      }),
    ],
  },
}

async function record(name) {
  const { scenario, replies } = SCENARIOS[name]
  const script = replies()
  const mock = await startMockLlm()
  const tmp = await tempDir('dsh-record-')
  try {
    const { home, workspace } = await replay.prepareRun(tmp.dir, scenario)
    mock.enqueue(...script)
    const result = await runDsh(replay.scenarioArgs(scenario), {
      home,
      cwd: workspace,
      env: { DEEPSEEK_BASE_URL: mock.url, DEEPSEEK_API_KEY: 'sk-record' },
    })
    const problems = []
    if (result.code !== scenario.exitCode) problems.push(`exit code ${result.code}, expected ${scenario.exitCode}`)
    if (mock.pending > 0) problems.push(`${mock.pending} of ${script.length} replies were not used`)
    if (mock.requests.length !== script.length)
      problems.push(`${mock.requests.length} requests for ${script.length} replies`)
    const logs = await replay.findSessionLogs(path.join(home, 'sessions'))
    if (logs.length !== 1) problems.push(`${logs.length} session logs instead of 1`)
    if (problems.length > 0)
      throw new Error(`${problems.join('; ')}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`)

    const text = await replay.readSessionText(logs[0])
    // Fails here, not in the test, when the log cannot be replayed.
    replay.repliesFromLog(replay.parseSessionLog(text, logs[0]))
    const dir = path.join(snapshots, name)
    await mkdir(dir, { recursive: true })
    const saved = replay.parseScenario({ ...scenario, stdout: result.stdout })
    await writeFile(path.join(dir, replay.SCENARIO_FILE), `${JSON.stringify(saved, null, 2)}\n`)
    await writeFile(path.join(dir, replay.SESSION_FILE), text)
    console.log(`recorded ${name}: ${script.length} replies, exit ${result.code}`)
  } finally {
    await mock.close()
    await tmp.dispose()
  }
}

const args = process.argv.slice(2)
if (args.includes('--list')) {
  console.log(Object.keys(SCENARIOS).join('\n'))
  process.exit(0)
}
const unknown = args.filter((name) => !(name in SCENARIOS))
if (unknown.length > 0) {
  console.error(`record-scenario: unknown scenario ${unknown.join(', ')} (known: ${Object.keys(SCENARIOS).join(', ')})`)
  process.exit(1)
}
for (const name of args.length > 0 ? args : Object.keys(SCENARIOS)) {
  try {
    await record(name)
  } catch (error) {
    console.error(`record-scenario: ${name}: ${error instanceof Error ? error.message : String(error)}`)
    process.exitCode = 1
  }
}
