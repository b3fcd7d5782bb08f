import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { runDsh, startDsh } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'
import { type LoggedEvent, ONE_TOOL_TURN, onlyStoredSession, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

/** Writes a `--patch` overlay into the test's folder and returns its path. */
function patchFile(name: string, yaml: string): string {
  const file = path.join(t.root, name)
  writeFileSync(file, yaml)
  return file
}

const readLog = (sessionId: string) => readSessionLog(t.home, sessionId)
const onlySessionId = () => onlyStoredSession(t.home)

const types = (events: LoggedEvent[]) => events.map((e) => e.type)

describe('dsh --profile headless', () => {
  it('runs a task that writes a file, prints the answer and records the session', async () => {
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'hello.txt', content: 'hello from dsh\n' } }], {
        reasoning: 'I will create the file.',
      }),
      reply.text('Created hello.txt.'),
    )
    const result = await t.headless(['create hello.txt'])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Created hello.txt.\n')
    expect(readFileSync(path.join(t.work, 'hello.txt'), 'utf8')).toBe('hello from dsh\n')

    const { header, events } = await readLog(onlySessionId())
    expect(header).toMatchObject({ type: 'session', cwd: t.work })
    expect(types(events)).toEqual(ONE_TOOL_TURN)
    expect(events.at(-1)?.data).toEqual({ turn: 1, reason: 'completed' })
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))

    const [first, second] = t.mock.requests
    expect(first?.headers.authorization).toBe('Bearer sk-test-key')
    expect(first?.body.stream_options).toEqual({ include_usage: true })
    expect(first?.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(
      expect.arrayContaining(['bash', 'edit', 'read', 'write']),
    )
    // The second request repeats the first one's messages (prompt cache) and adds the reply and the tool result.
    expect(second?.body.messages.slice(0, first?.body.messages.length)).toEqual(first?.body.messages)
    const assistant = second?.body.messages.find((m: { role: string }) => m.role === 'assistant')
    expect(assistant.reasoning_content).toBe('I will create the file.')
    const tool = second?.body.messages.find((m: { role: string }) => m.role === 'tool')
    expect(tool.content).toMatch(/hello\.txt/)
  })

  it('--plan runs the task in plan mode: a write is refused and the answer is the plan', async () => {
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'hello.txt', content: 'too early\n' } }]),
      reply.text('# Plan\n1. Create hello.txt.'),
    )
    const result = await t.headless(['--plan', 'create hello.txt'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('# Plan\n1. Create hello.txt.\n')
    expect(existsSync(path.join(t.work, 'hello.txt'))).toBe(false)
    expect(JSON.stringify(t.mock.requests[0]?.body.messages)).toContain('Plan mode')
    const { events } = await readLog(onlySessionId())
    expect(events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }])
    const denied = events.find((e) => e.type === 'tool/result')?.data
    expect(denied).toMatchObject({ name: 'write', error: { code: 'DENIED' } })
    expect(JSON.stringify(denied?.message)).toContain('plan mode')

    // Without the flag the next task runs as usual.
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'hello.txt', content: 'now\n' } }]),
      reply.text('Created.'),
    )
    expect((await t.headless(['create hello.txt'])).code).toBe(0)
    expect(readFileSync(path.join(t.work, 'hello.txt'), 'utf8')).toBe('now\n')
  })

  it('runs bash and feeds its output back', async () => {
    t.mock.enqueue(
      reply.toolCalls([
        { name: 'bash', arguments: { description: 'Run a command', command: 'echo $((6*7)) | tee answer.txt' } },
      ]),
      reply.text('The answer is 42.'),
    )
    const result = await t.headless(['compute', '6*7'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('The answer is 42.\n')
    expect(readFileSync(path.join(t.work, 'answer.txt'), 'utf8')).toBe('42\n')
    const tool = t.mock.requests[1]?.body.messages.find((m: { role: string }) => m.role === 'tool')
    expect(tool.content).toMatch(/42/)
  })

  it('runs two tools in one step and logs their results in the model order', async () => {
    t.mock.enqueue(
      reply.toolCalls([
        { name: 'write', arguments: { file_path: 'a.txt', content: 'A' } },
        { name: 'bash', arguments: { description: 'Run a command', command: 'ls' } },
      ]),
      reply.text('Both done.'),
    )
    const result = await t.headless(['two things'])
    expect(result.code).toBe(0)
    const { events } = await readLog(onlySessionId())
    const calls = events.filter((e) => e.type === 'tool/call').map((e) => e.data.name)
    const results = events.filter((e) => e.type === 'tool/result').map((e) => e.data.name)
    expect(calls).toEqual(['write', 'bash'])
    expect(results).toEqual(['write', 'bash'])
    const toolMessages = t.mock.requests[1]?.body.messages.filter((m: { role: string }) => m.role === 'tool')
    expect(toolMessages).toHaveLength(2)
  })

  it('retries a 503 and records the failed attempt', async () => {
    t.mock.enqueue(reply.error(503, { retryAfter: 0 }), reply.text('Recovered.'))
    const result = await t.headless(['hello'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Recovered.\n')
    const { events } = await readLog(onlySessionId())
    const attempt = events.find((e) => e.type === 'assistant/attempt')
    expect(attempt?.data.error.code).toBe('SERVER')
    expect(events.find((e) => e.type === 'llm/retry')?.data).toMatchObject({ attempt: 1, delayMs: 0 })
    expect(t.mock.requests).toHaveLength(2)
  })

  it('ends with the provider error code on stderr and exit 1', async () => {
    t.mock.enqueue(reply.error(401))
    const result = await t.headless(['hello'])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^dsh: AUTH: /)
    const { events } = await readLog(onlySessionId())
    expect(events.at(-1)?.data).toMatchObject({ reason: 'error', error: { code: 'AUTH' } })
  })

  it('names the variable to set when the key is missing', async () => {
    const result = await t.headless(['hello'], { DEEPSEEK_API_KEY: undefined })
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^dsh: MISSING_CREDENTIAL: .*DEEPSEEK_API_KEY/)
    expect(t.mock.requests).toHaveLength(0)
  })

  it('reads the key from the home .env: quoted, with a comment, after a value over several lines', async () => {
    await mkdir(t.home, { recursive: true })
    writeFileSync(
      path.join(t.home, '.env'),
      [
        'NOTE="a value over',
        'DEEPSEEK_API_KEY=sk-inside-a-quoted-value',
        'two lines"',
        'export DEEPSEEK_API_KEY="sk-from-dotenv" # the key dsh uses',
        '',
      ].join('\n'),
      { mode: 0o600 },
    )
    t.mock.enqueue(reply.text('Keyed.'))
    const result = await t.headless(['hello'], { DEEPSEEK_API_KEY: undefined })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(t.mock.requests[0]?.headers.authorization).toBe('Bearer sk-from-dotenv')
  })

  it('reads the task from standard input for -, after the words given', async () => {
    const userText = (index: number) =>
      t.mock.requests[index]?.body.messages.filter((m: { role: string }) => m.role === 'user').at(-1)?.content
    t.mock.enqueue(reply.text('Listed.'), reply.text('Reviewed.'))
    const piped = await t.headless(['-'], {}, 'list the files\n')
    expect(piped.stderr).toBe('')
    expect(piped.code).toBe(0)
    expect(piped.stdout).toBe('Listed.\n')
    expect(userText(0)).toBe('list the files')

    const diff = '--- a/x.ts\n+++ b/x.ts\n@@ -1 +1 @@\n-old\n+new\n'
    const review = await t.headless(['review', 'this diff:', '-'], {}, diff)
    expect(review.code).toBe(0)
    expect(userText(1)).toBe(`review this diff:\n\n${diff.trimEnd()}`)
  })

  it('refuses empty, binary or oversized standard input before any session starts', async () => {
    const empty = await t.headless(['-'], {}, ' \n')
    expect(empty.code).toBe(1)
    expect(empty.stderr).toBe('dsh: a task is required, and standard input was empty\n')
    const binary = await t.headless(['explain', '-'], {}, 'abc\u0000def')
    expect(binary.code).toBe(1)
    expect(binary.stderr).toBe('dsh: standard input is binary (a NUL byte at offset 3); the task must be text\n')
    const huge = await t.headless(['-'], {}, 'x'.repeat(4 * 1024 * 1024 + 1))
    expect(huge.code).toBe(1)
    expect(huge.stderr).toBe(
      'dsh: standard input holds more than 4 MiB; save it to a file in the workspace and name the file in the task\n',
    )
    expect(t.mock.requests).toHaveLength(0)
    expect(existsSync(path.join(t.home, 'sessions')) ? readdirSync(path.join(t.home, 'sessions')) : []).toEqual([])
  })

  it('--max-steps ends a task that keeps calling tools, with exit 1', async () => {
    t.mock.setFallback(reply.toolCalls([{ name: 'read', arguments: { file_path: 'missing.txt' } }]))
    try {
      const result = await t.headless(['--max-steps', '3', 'read forever'])
      expect(result.code).toBe(1)
      expect(result.stderr).toBe("dsh: INTERNAL: the turn reached 3 steps (the agent's maxSteps) and was stopped\n")
      expect(t.mock.requests).toHaveLength(3)
    } finally {
      t.mock.setFallback(undefined)
    }
    const bad = await t.headless(['--max-steps', 'many', 'x'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('error: --max-steps needs a whole number from 1 to 999999, got "many"')
  })

  it('waits for an agent driver whose row starts after the runner', async () => {
    // The loop now waits for headlessStartup, which the last rows provide: it starts together with the runner.
    const patch = patchFile('late-driver.yml', '- id: agent-loop\n  inject: [headlessStartup]\n')
    t.mock.enqueue(reply.text('Driven.'))
    const result = await runDsh(['--profile', 'headless', '--patch', patch, 'hello'], {
      home: t.home,
      cwd: t.work,
      env: t.env(),
    })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Driven.\n')
  })

  it('takes launcher flags after app flags (--permission x --patch f), and none after --', async () => {
    const patch = patchFile('no-todo.yml', '- id: todo\n  disabled: true\n')
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'blocked.txt', content: 'x' } }]),
      reply.text('Could not write.'),
    )
    const result = await t.headless(['--permission', 'read-only', '--patch', patch, 'try to write'])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Could not write.\n')
    // The overlay applied (no todo tool), and --permission reached the app (the write was denied).
    const tools = t.mock.requests[0]?.body.tools.map((tool: { function: { name: string } }) => tool.function.name)
    expect(tools).toContain('write')
    expect(tools).not.toContain('todo_write')
    expect(existsSync(path.join(t.work, 'blocked.txt'))).toBe(false)
    expect(toolTexts(t.mock.requests[1]).join('\n')).toMatch(/read-only/)
    expect(t.mock.requests[0]?.body.messages.at(-1).content).toBe('try to write')

    // After --, a launcher flag is the app's: the headless parser reports it, no overlay is read.
    const literal = await t.headless(['--', 'explain', '--patch', patch])
    expect(literal.code).toBe(1)
    expect(literal.stderr).toContain("error: unknown option '--patch'")
    expect(t.mock.requests).toHaveLength(2)
  })

  it('--verbose says on stderr what each tool call does, and which ones fail', async () => {
    t.mock.enqueue(
      reply.toolCalls([
        { name: 'write', arguments: { file_path: 'notes/hello.txt', content: 'hi\n' } },
        { name: 'read', arguments: { file_path: 'missing.txt' } },
      ]),
      reply.toolCalls([{ name: 'bash', arguments: { description: 'Run a command', command: 'cat notes/hello.txt' } }]),
      reply.text('Done.'),
    )
    const result = await t.headless(['-v', 'make a note'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Done.\n')
    const [session, ...lines] = result.stderr.trimEnd().split('\n')
    // The id to --resume comes first, once the task is stored.
    expect(session).toBe(`dsh: session ${onlySessionId()}`)
    expect(lines[0]).toBe('→ Write notes/hello.txt')
    expect(lines[1]).toBe('→ Read missing.txt')
    expect(lines[2]).toMatch(/^ {2}✗ read: \w+: .*missing\.txt/)
    expect(lines.slice(3)).toEqual(['→ `cat notes/hello.txt`'])
  })

  it('takes the model from --model, else settings.yaml, else the agent row', async () => {
    t.mock.enqueue(reply.text('a'), reply.text('b'), reply.text('c'))
    expect((await t.headless(['one'])).code).toBe(0)
    await mkdir(t.home, { recursive: true })
    writeFileSync(path.join(t.home, 'settings.yaml'), 'agent:\n  model: deepseek-v4-pro\n  reasoningEffort: max\n')
    expect((await t.headless(['two'])).code).toBe(0)
    expect((await t.headless(['--model', 'deepseek-custom', 'three'])).code).toBe(0)
    expect(t.mock.requests.map((r) => r.body.model)).toEqual([
      'deepseek-v4-flash',
      'deepseek-v4-pro',
      'deepseek-custom',
    ])
    expect(t.mock.requests[1]?.body.reasoning_effort).toBe('max')
    writeFileSync(path.join(t.home, 'settings.yaml'), 'agent:\n  colour: blue\n')
    const bad = await t.headless(['four'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toBe(
      `dsh: ${path.join(t.home, 'settings.yaml')}: unknown setting agent.colour (known: provider, model, reasoningEffort)\n`,
    )
  })

  it('Ctrl+C cancels a streaming turn, saves the log and exits 130', async () => {
    t.mock.enqueue(reply.stall(3, reply.text('This answer will never finish streaming because the server stalls')))
    const running = startDsh(['--profile', 'headless', 'talk slowly'], { home: t.home, cwd: t.work, env: t.env() })
    await t.mock.waitForRequests(1)
    await new Promise((resolve) => setTimeout(resolve, 100))
    const result = await running.kill('SIGINT')
    expect(result.code).toBe(130)
    const { events } = await readLog(onlySessionId())
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    const last = events.filter((e) => e.type === 'assistant/message' || e.type === 'assistant/attempt').at(-1)
    expect(last).toBeDefined()
  })

  it('SIGTERM stops a running task: the log is saved and the exit code says it did not complete', async () => {
    t.mock.enqueue(reply.stall(3, reply.text('This answer will never finish streaming because the server stalls')))
    const running = startDsh(['--profile', 'headless', 'talk slowly'], { home: t.home, cwd: t.work, env: t.env() })
    await t.mock.waitForRequests(1)
    const result = await running.kill('SIGTERM')
    expect(result.code).toBe(1)
    expect(result.stderr).toBe('dsh: the task was stopped before it completed\n')
    const { events } = await readLog(onlySessionId())
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
  })

  it('resumes a finished session with a follow-up task', async () => {
    const usage = { promptCacheHitTokens: 1200, promptCacheMissTokens: 34, completionTokens: 56, reasoningTokens: 7 }
    t.mock.enqueue(reply.completion({ content: 'First answer.', usage }), reply.text('Second answer.'))
    const first = await t.headless(['--json', 'first question'])
    expect(first.code).toBe(0)
    const lines = first.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines[0]).toMatchObject({ type: 'session' })
    const result = lines.at(-1)
    expect(result).toEqual({
      type: 'result',
      sessionId: lines[0].sessionId,
      reason: 'completed',
      text: 'First answer.',
      usage: { inputTokens: 34, outputTokens: 56, cacheReadTokens: 1200, reasoningTokens: 7 },
      costUsd: expect.any(Number),
      durationMs: expect.any(Number),
      steps: 1,
      context: { tokens: 34 + 1200 + 56, window: 1_000_000, percent: 0.1 },
    })
    // deepseek-v4-flash at its list price: $0.14 per million missed, $0.0028 cached, $0.28 output.
    expect(result.costUsd).toBeCloseTo((34 * 0.14 + 1200 * 0.0028 + 56 * 0.28) / 1e6, 12)
    expect(result.durationMs).toBeGreaterThanOrEqual(0)
    expect(lines.some((l) => l.type === 'delta' && l.kind === 'text')).toBe(true)
    const sessionId = lines[0].sessionId as string

    const second = await t.headless(['--resume', sessionId, 'second question'])
    expect(second.code).toBe(0)
    expect(second.stdout).toBe('Second answer.\n')
    const texts = t.mock.requests[1]?.body.messages.map((m: { content: unknown }) => m.content)
    expect(texts).toEqual(expect.arrayContaining(['first question', 'First answer.', 'second question']))
    const { events } = await readLog(sessionId)
    expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data.turn)).toEqual([1, 2])
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    expect(events.find((e) => e.type === 'request/header' && e.data.reason === 'resume')).toBeDefined()
  })

  it('--continue resumes the latest session started in this directory', async () => {
    const none = await t.headless(['--continue', 'anything there?'])
    expect(none.code).toBe(1)
    expect(none.stderr).toBe(`dsh: --continue: no stored session was started in ${realpathSync(t.work)}\n`)
    const both = await t.headless(['--continue', '--resume', 'session-x', 'hi'])
    expect(both.code).toBe(1)
    expect(both.stderr).toContain('--continue and --resume cannot be used together')

    t.mock.enqueue(reply.text('Older.'), reply.text('Newer.'), reply.text('Elsewhere.'), reply.text('Continued.'))
    const sessionIdOf = (stdout: string) => JSON.parse(stdout.split('\n')[0] as string).sessionId as string
    const older = sessionIdOf((await t.headless(['--json', 'older question'])).stdout)
    const newer = sessionIdOf((await t.headless(['--json', 'newer question'])).stdout)
    const elsewhere = path.join(t.root, 'elsewhere')
    await mkdir(elsewhere)
    const other = await runDsh(['--profile', 'headless', 'question elsewhere'], {
      home: t.home,
      cwd: elsewhere,
      env: t.env(),
    })
    expect(other.code).toBe(0)

    const continued = await t.headless(['--json', '-c', 'follow-up'])
    expect(continued.code).toBe(0)
    expect(JSON.parse(continued.stdout.split('\n')[0] as string)).toEqual({
      type: 'session',
      sessionId: newer,
      resumed: true,
    })
    const texts = t.mock.requests[3]?.body.messages.map((m: { content: unknown }) => m.content)
    expect(texts).toEqual(expect.arrayContaining(['newer question', 'Newer.', 'follow-up']))
    expect(texts).not.toContain('older question')
    expect((await readLog(older)).events.filter((e) => e.type === 'turn/end')).toHaveLength(1)
    expect((await readLog(newer)).events.filter((e) => e.type === 'turn/end')).toHaveLength(2)
  })

  it('refuses to resume a session another dsh has open, and resumes it once that one has exited', async () => {
    t.mock.enqueue(reply.text('First answer.'))
    const first = await t.headless(['--json', 'first question'])
    const sessionId = JSON.parse(first.stdout.split('\n')[0] as string).sessionId as string

    t.mock.enqueue(reply.stall(2, reply.text('A long answer that the server never finishes')))
    const holder = startDsh(['--profile', 'headless', '--resume', sessionId, 'second question'], {
      home: t.home,
      cwd: t.work,
      env: t.env(),
    })
    await t.mock.waitForRequests(2)
    const refused = await t.headless(['--continue', 'third question'])
    expect(refused.code).toBe(1)
    const lease = path.join(t.home, 'sessions', `${sessionId}.lock`)
    expect(refused.stderr).toMatch(
      new RegExp(
        `^dsh: session ${sessionId} is open in another dsh \\(process ${holder.child.pid} on .+, since .+\\); finish or close it there first \\(if that process is gone, remove ${lease.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\)\n$`,
      ),
    )
    expect(t.mock.requests).toHaveLength(2)

    expect((await holder.kill('SIGINT')).code).toBe(130)
    expect(existsSync(lease)).toBe(false)
    t.mock.enqueue(reply.text('Third answer.'))
    const third = await t.headless(['--continue', 'third question'])
    expect(third.stderr).toBe('')
    expect(third.code).toBe(0)
    const { events } = await readLog(sessionId)
    // The second turn ends as the holder saw it (cancelled), not as a crash someone else repaired.
    expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual([
      'completed',
      'aborted',
      'completed',
    ])
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
  })

  it('after a crash mid-turn, resume closes the turn as interrupted and goes on', async () => {
    t.mock.enqueue(
      reply.toolCalls([{ name: 'bash', arguments: { description: 'Run a command', command: 'sleep 30' } }]),
    )
    const running = startDsh(['--profile', 'headless', '--json', 'wait a while'], {
      home: t.home,
      cwd: t.work,
      env: t.env(),
    })
    await running.waitFor(/"type":"tool\/call"/, { stream: 'stdout' })
    // The log is flushed at turn ends; make sure the tool call reached the disk before the crash.
    const sessionId = JSON.parse(running.stdout.split('\n')[0] as string).sessionId as string
    await running.waitFor(/"type":"tool\/call"/, { stream: 'stdout' })
    const deadline = Date.now() + 10_000
    while (Date.now() < deadline) {
      const file = path.join(t.home, 'sessions', `${sessionId}.jsonl`)
      if (existsSync(file) && readFileSync(file, 'utf8').includes('"tool/call"')) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const killed = await running.kill('SIGKILL')
    expect(killed.signal).toBe('SIGKILL')

    t.mock.enqueue(reply.text('Picked up where we left off.'))
    const resumed = await t.headless(['--resume', sessionId, 'continue'])
    expect(resumed.stderr).toMatch(/stopped mid-turn; the turn was closed as interrupted/)
    expect(resumed.code).toBe(0)
    expect(resumed.stdout).toBe('Picked up where we left off.\n')
    const { events } = await readLog(sessionId)
    const unknown = events.find((e) => e.type === 'tool/result')
    expect(unknown?.data.error.code).toBe('TOOL_OUTCOME_UNKNOWN')
    expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual(['interrupted', 'completed'])
  })
})
