// Builds a realistic session log: the events the agent loop writes for a long
// session of coding turns. Deterministic (a seeded generator), so every run of
// the benchmark opens the same bytes.
import { randomUUID } from 'node:crypto'

/** A small seeded generator (mulberry32), so the log is the same on every run. */
export function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = (
  'the agent reads files runs commands and edits code so the tests pass while keeping the change small and the ' +
  'build green before it answers with a short summary of what changed and why the session log stays the truth'
).split(' ')

const FILES = [
  'src/index.ts',
  'src/session.ts',
  'src/store.ts',
  'tests/store.test.ts',
  'package.json',
  'README.md',
  'src/util/format.ts',
  'src/cli.ts',
]

/** The tool schemas a request header records (the shapes of dsh's own tools, with shorter descriptions). */
const TOOLS = [
  {
    name: 'bash',
    description:
      'Run a command with `bash -c` in the workspace and return its output, separate stdout and stderr sections and the exit code.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', minLength: 1 },
        timeout: { type: 'integer', minimum: 1, maximum: 600000 },
        description: { type: 'string' },
      },
      required: ['command'],
    },
  },
  {
    name: 'edit',
    description:
      'Replace exact text in a file; `old_string` must match exactly once unless `replace_all` is true. Returns a diff.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1 },
        old_string: { type: 'string', minLength: 1 },
        new_string: { type: 'string' },
        replace_all: { type: 'boolean' },
      },
      required: ['path', 'old_string', 'new_string'],
    },
  },
  {
    name: 'read',
    description: 'Read a text file; returns its lines numbered like `cat -n`, up to 2000 lines from `offset`.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1 },
        offset: { type: 'integer', minimum: 1 },
        limit: { type: 'integer', minimum: 1 },
      },
      required: ['path'],
    },
  },
  {
    name: 'write',
    description:
      'Write a whole text file, creating folders as needed. An existing file must have been read in this session first.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string', minLength: 1 }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
]

/**
 * `count` session events of a long coding session, as `@dsh/agent-loop`
 * writes them: per turn `turn/start`, then steps (`step/start`, the user's
 * message on the first step, an `assistant/message` with text and 1 to 3 tool
 * calls, a `tool/call` and a `tool/result` of a few hundred bytes per call,
 * `step/end`), a last step whose reply is text only, and `turn/end`. The
 * first step of the session also carries the system message and the request
 * header and context. Ends on a completed turn.
 */
export function sessionEvents({
  count,
  cwd,
  model = 'deepseek-v4-flash',
  startTime = Date.UTC(2026, 0, 5, 9),
  seed = 42,
}) {
  const rand = random(seed)
  const pick = (list) => list[Math.floor(rand() * list.length)]
  const words = (n) => Array.from({ length: n }, () => pick(WORDS)).join(' ')
  const between = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1))
  const source = { kind: 'model', provider: 'deepseek', model }

  const events = []
  let time = startTime
  const add = (type, data) => {
    time += between(1, 40)
    events.push({ seq: events.length, time, type, data })
  }
  const message = (role, content, src) => ({ id: randomUUID(), role, content, source: src })
  const usage = () => ({
    inputTokens: between(2000, 60000),
    outputTokens: between(20, 600),
    cacheReadTokens: between(0, 50000),
    reasoningTokens: between(0, 300),
  })

  const toolCall = (turn, step, index) => {
    const id = `call_${String(index).padStart(2, '0')}_${randomUUID().replaceAll('-', '').slice(0, 16)}`
    const file = pick(FILES)
    const kind = pick(['read', 'read', 'bash', 'edit'])
    const args =
      kind === 'read'
        ? { path: file }
        : kind === 'bash'
          ? { command: `pnpm vitest run ${file}`, description: words(4) }
          : { path: file, old_string: words(6), new_string: words(7) }
    return { id, name: kind, arguments: JSON.stringify(args), turn, step }
  }
  const toolOutput = (call) => {
    const lines = between(4, 12)
    if (call.name === 'read')
      return Array.from({ length: lines }, (_, i) => `${String(i + 1).padStart(6)}\t${words(between(3, 9))}`).join('\n')
    if (call.name === 'bash')
      return `stdout:\n${Array.from({ length: lines }, () => ` ✓ ${words(between(3, 7))}`).join('\n')}\nexit code: 0`
    return `--- a\n+++ b\n@@ -1,3 +1,3 @@\n-${words(6)}\n+${words(7)}\n ${words(8)}`
  }

  // A tool step with `calls` tool calls is 3 + 2 * calls events; the closing text step is 3; a turn adds 3 more.
  const toolStep = (turn, step, calls, first, userText) => {
    add('step/start', { turn, step })
    if (first) {
      if (turn === 1) {
        add('system/message', {
          message: message(
            'system',
            [{ type: 'text', text: `You are dsh, a coding agent working in ${cwd} with the ${model} model.` }],
            { kind: 'system' },
          ),
        })
      }
      add('user/message', { message: message('user', [{ type: 'text', text: userText }], { kind: 'user' }) })
      if (turn === 1) {
        add('request/header', { reason: 'initial', provider: 'deepseek', model, tools: TOOLS })
        add('request/context', { provider: 'deepseek', model, contextWindow: 1000000 })
      }
    }
    const list = Array.from({ length: calls }, (_, i) => toolCall(turn, step, i))
    const content = [
      { type: 'reasoning', text: words(between(10, 40)) },
      { type: 'text', text: words(between(5, 20)) },
    ]
    for (const c of list) content.push({ type: 'tool-call', id: c.id, name: c.name, arguments: c.arguments })
    add('assistant/message', {
      turn,
      step,
      message: message('assistant', content, source),
      finish: 'tool-calls',
      usage: usage(),
    })
    for (const c of list) add('tool/call', { turn, step, callId: c.id, name: c.name, arguments: c.arguments })
    for (const c of list) {
      const block = { type: 'tool-result', toolCallId: c.id, content: [{ type: 'text', text: toolOutput(c) }] }
      add('tool/result', {
        turn,
        step,
        callId: c.id,
        name: c.name,
        message: message('user', [block], { kind: 'tool', name: c.name }),
      })
    }
    add('step/end', { turn, step })
  }
  const textStep = (turn, step) => {
    add('step/start', { turn, step })
    const content = [{ type: 'text', text: words(between(40, 120)) }]
    add('assistant/message', {
      turn,
      step,
      message: message('assistant', content, source),
      finish: 'stop',
      usage: usage(),
    })
    add('step/end', { turn, step })
  }
  // One turn made of tool steps with these call counts, then a text answer.
  const turnOf = (turn, callCounts) => {
    add('turn/start', { turn })
    const userText = `${words(between(12, 40))}?`
    for (const [i, calls] of callCounts.entries()) toolStep(turn, i + 1, calls, i === 0, userText)
    textStep(turn, callCounts.length + 1)
    add('turn/end', { turn, reason: 'completed' })
  }

  const size = (callCounts, turn) => 6 + callCounts.reduce((sum, c) => sum + 3 + 2 * c, 0) + (turn === 1 ? 3 : 0)
  let turn = 0
  // Ordinary turns until the rest fits one last, larger turn.
  for (;;) {
    const callCounts = Array.from({ length: between(1, 6) }, () => between(1, 3))
    if (count - events.length - size(callCounts, turn + 1) < 120) break
    turnOf(++turn, callCounts)
  }
  // The last turn fills exactly: 6 events plus tool steps of 5 (one call), or of 3 + 2c.
  let rest = count - events.length - 6 - (turn === 0 ? 3 : 0)
  const last = []
  while (rest > 15) {
    last.push(1)
    rest -= 5
  }
  if (rest % 2 === 1) last.push((rest - 3) / 2)
  else last.push(1, (rest - 8) / 2)
  turnOf(++turn, last)
  if (events.length !== count) throw new Error(`session generator: made ${events.length} events, wanted ${count}`)
  return events
}
