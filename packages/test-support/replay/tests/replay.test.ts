import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { compress } from 'zstd-napi'
import {
  describeRequest,
  expectedRequests,
  findSessionLogs,
  type LoggedEvent,
  normaliseLog,
  parseScenario,
  parseSessionLog,
  prepareRun,
  readSessionLog,
  ReplayError,
  repliesFromLog,
  scenarioArgs,
  type SessionLog,
} from '../src/index.ts'

const WORK = '/tmp/dsh-record-abc123/work'
const HOME = '/tmp/dsh-record-abc123/home'

/** A log from `[type, data]` pairs, numbered from seq 0, with made-up times. */
function logOf(events: [string, Record<string, unknown>][], header: Partial<SessionLog['header']> = {}): SessionLog {
  return {
    header: { type: 'session', format: 1, id: 'session-1111', createdAt: 1_700_000_000_000, cwd: WORK, ...header },
    events: events.map(([type, data], seq): LoggedEvent => ({ seq, time: 1_700_000_000_000 + seq * 7, type, data })),
  }
}

const toolSchemas = [
  { name: 'bash', description: '', parameters: {} },
  { name: 'read', description: '', parameters: {} },
]
const header = [
  'request/header',
  { reason: 'initial', provider: 'deepseek', model: 'deepseek-v4-flash', tools: toolSchemas },
] as [string, Record<string, unknown>]
const system = (id = 'm-sys') =>
  [
    'system/message',
    {
      message: {
        id,
        role: 'system',
        content: [{ type: 'text', text: `You work in ${WORK}.` }],
        source: { kind: 'system' },
      },
    },
  ] as [string, Record<string, unknown>]
const user = (text: string, id = 'm-user') =>
  ['user/message', { message: { id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } } }] as [
    string,
    Record<string, unknown>,
  ]
const assistant = (content: unknown[], extra: Record<string, unknown> = {}, id = 'm-a1') =>
  [
    'assistant/message',
    {
      turn: 1,
      step: 1,
      message: { id, role: 'assistant', content, source: { kind: 'model' } },
      finish: 'stop',
      ...extra,
    },
  ] as [string, Record<string, unknown>]
const attempt = (error: Record<string, unknown>) =>
  ['assistant/attempt', { turn: 1, step: 1, attempt: 1, error }] as [string, Record<string, unknown>]
const toolResult = (callId: string, text: string, id = 'm-r1') =>
  [
    'tool/result',
    {
      turn: 1,
      step: 1,
      callId,
      name: 'bash',
      message: {
        id,
        role: 'user',
        content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text }] }],
        source: { kind: 'tool' },
      },
    },
  ] as [string, Record<string, unknown>]

let tmp: string
beforeEach(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'dsh-replay-unit-'))
})
afterEach(() => rm(tmp, { recursive: true, force: true }))

describe('reading logs', () => {
  const text = `${JSON.stringify({ type: 'session', format: 1, id: 's-1', createdAt: 1, cwd: '/w' })}\n${JSON.stringify({ seq: 0, time: 2, type: 'turn/start', data: { turn: 1 } })}\n`

  it('reads a plain log and a sealed one alike', async () => {
    await writeFile(path.join(tmp, 'a.jsonl'), text)
    await writeFile(path.join(tmp, 'b.jsonl.zst'), compress(Buffer.from(text)))
    const plain = await readSessionLog(path.join(tmp, 'a.jsonl'))
    expect(plain.header.id).toBe('s-1')
    expect(plain.events).toEqual([{ seq: 0, time: 2, type: 'turn/start', data: { turn: 1 } }])
    expect(await readSessionLog(path.join(tmp, 'b.jsonl.zst'))).toEqual(plain)
  })

  it('names the line that is not a log line', () => {
    expect(() => parseSessionLog(`${text}{"seq":1}\n`, 'x.jsonl')).toThrow(/^x\.jsonl, line 3: not a session event/)
    expect(() => parseSessionLog('{oops', 'x.jsonl')).toThrow(/x\.jsonl, line 1: not JSON/)
    expect(() => parseSessionLog('{"type":"turn/start"}\n')).toThrow(ReplayError)
    expect(() => parseSessionLog('\n')).toThrow(/empty/)
  })

  it('lists the logs of a sessions folder, leaving temp files out', async () => {
    const dir = path.join(tmp, 'sessions')
    await mkdir(dir)
    for (const name of ['s-2.jsonl.zst', 's-1.jsonl', 's-3.jsonl.tmp-0a1b2c', 'notes.txt'])
      await writeFile(path.join(dir, name), '')
    expect(await findSessionLogs(dir)).toEqual([path.join(dir, 's-1.jsonl'), path.join(dir, 's-2.jsonl.zst')])
    expect(await findSessionLogs(path.join(tmp, 'none'))).toEqual([])
  })
})

describe('repliesFromLog', () => {
  it('turns a reply into a completion with the same blocks, ids, raw arguments, finish and usage', () => {
    const args = '{"command": "ls  -la"}'
    const log = logOf([
      header,
      assistant(
        [
          { type: 'reasoning', text: 'Look first.' },
          { type: 'text', text: 'Listing.' },
          { type: 'tool-call', id: 'call_00_x', name: 'bash', arguments: args },
          { type: 'tool-call', id: 'call_01_y', name: 'read', arguments: '{"file_path":"a"}' },
        ],
        {
          finish: 'tool-calls',
          usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 640, reasoningTokens: 3 },
        },
      ),
      assistant([{ type: 'text', text: 'Cut off' }], { finish: 'max-tokens' }, 'm-a2'),
    ])
    expect(repliesFromLog(log)).toEqual([
      {
        kind: 'completion',
        reasoning: 'Look first.',
        content: 'Listing.',
        toolCalls: [
          { id: 'call_00_x', name: 'bash', arguments: args },
          { id: 'call_01_y', name: 'read', arguments: '{"file_path":"a"}' },
        ],
        finishReason: 'tool_calls',
        usage: { promptCacheMissTokens: 100, promptCacheHitTokens: 640, completionTokens: 20, reasoningTokens: 3 },
      },
      { kind: 'completion', content: 'Cut off', finishReason: 'length', usage: null },
    ])
  })

  it('turns failed attempts into HTTP errors, cut connections and empty streams', () => {
    const log = logOf([
      header,
      attempt({ code: 'SERVER', message: 'busy', status: 503, retryAfterMs: 0, requestId: 'req-9' }),
      attempt({ code: 'RATE_LIMIT', message: 'slow down', status: 429, retryAfterMs: 2000 }),
      attempt({ code: 'TRANSPORT', message: 'broke', requestId: 'req-10' }),
      attempt({ code: 'EMPTY_RESPONSE', message: 'nothing' }),
      attempt({ code: 'SERVER', message: 'busy', status: 500 }),
    ])
    const [busy, limited, cut, empty, plain] = repliesFromLog(log)
    expect(busy).toMatchObject({ kind: 'error', status: 503, retryAfter: 0, headers: { 'x-request-id': 'req-9' } })
    expect(limited).toMatchObject({ kind: 'error', status: 429, retryAfter: 2 })
    expect(cut).toMatchObject({
      kind: 'cut',
      after: 0,
      reply: { kind: 'completion' },
      headers: { 'x-request-id': 'req-10' },
    })
    expect(empty).toEqual({ kind: 'completion', usage: null })
    expect(plain).toMatchObject({ kind: 'error', status: 500, retryAfter: 0 })
    expect(plain).not.toHaveProperty('headers')
    expect(repliesFromLog(log, { retryAfter: 0 })[1]).toMatchObject({ retryAfter: 0 })
  })

  it('skips failures that never reached the provider', () => {
    const log = logOf([header, attempt({ code: 'MISSING_CREDENTIAL', message: 'no key' })])
    expect(repliesFromLog(log)).toEqual([])
    expect(expectedRequests(log)).toEqual([])
  })

  it('refuses what the mock cannot reproduce, naming the event', () => {
    const refuse = (event: [string, Record<string, unknown>], pattern: RegExp) =>
      expect(() => repliesFromLog(logOf([header, event]))).toThrow(pattern)
    refuse(attempt({ code: 'ABORTED', message: 'cancelled' }), /^event seq 1 \(assistant\/attempt\): .*ABORTED/)
    refuse(assistant([{ type: 'text', text: 'half' }], { finish: 'aborted', interrupted: true }), /seq 1 .*interrupted/)
    refuse(assistant([{ type: 'text', text: 'x' }], { finish: 'error' }), /finish "error" cannot be replayed/)
    refuse(
      assistant([
        { type: 'text', text: 'a' },
        { type: 'reasoning', text: 'b' },
      ]),
      /block 1 \(reasoning\) is out of order/,
    )
    refuse(
      assistant([
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ]),
      /block 1 \(text\) is out of order/,
    )
    refuse(assistant([{ type: 'image', mediaType: 'image/png', data: '' }]), /block 0 has type "image"/)
  })
})

describe('normaliseLog', () => {
  const run = (id: string, root: string, messageIds: string[], output = 'file.txt') => {
    const work = `${root}/work`
    const args = JSON.stringify({ command: `cat ${work}/file.txt` })
    const events: [string, Record<string, unknown>][] = [
      system(messageIds[0]),
      user('hi', messageIds[1]),
      assistant(
        [{ type: 'tool-call', id: 'call_1', name: 'bash', arguments: args }],
        { finish: 'tool-calls' },
        messageIds[2],
      ),
      ['tool/call', { turn: 1, step: 1, callId: 'call_1', name: 'bash', arguments: args }],
      toolResult('call_1', `${output} in ${work}, spill at ${root}/home/sessions/${id}/out.txt`, messageIds[3]),
    ]
    const moved = events.map(([type, data]): [string, Record<string, unknown>] => [
      type,
      JSON.parse(JSON.stringify(data).replaceAll(WORK, work)),
    ])
    return logOf(moved, { id, cwd: work, createdAt: Math.random() })
  }

  it('takes out times, ids and paths and keeps everything else', () => {
    const log = run('session-aaaa', '/tmp/dsh-record-abc123', ['u1', 'u2', 'u3', 'u4'])
    const out = normaliseLog(log, { home: HOME })
    expect(out.header).toEqual({ type: 'session', format: 1, id: '<session>', cwd: '<workspace>' })
    expect(out.events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4])
    expect(out.events.some((e) => 'time' in e)).toBe(false)
    expect(out.events[0]).toMatchObject({
      type: 'system/message',
      data: { message: { id: '<message-1>', content: [{ text: 'You work in <workspace>.' }] } },
    })
    expect(out.events[3]).toMatchObject({
      data: { callId: 'call_1', arguments: '{"command":"cat <workspace>/file.txt"}' },
    })
    expect(JSON.stringify(out.events[4])).toContain(
      'file.txt in <workspace>, spill at <home>/sessions/<session>/out.txt',
    )
    expect(JSON.stringify(out.events[4])).toContain('<message-4>')
  })

  it('makes two runs of the same scenario equal, and tells a changed output apart', () => {
    const a = run('session-aaaa', '/tmp/dsh-record-abc123', ['u1', 'u2', 'u3', 'u4'])
    const b = run('session-bbbb', '/tmp/dsh-replay-zyx987', ['v1', 'v2', 'v3', 'v4'])
    const c = run('session-cccc', '/tmp/dsh-replay-zyx987', ['v1', 'v2', 'v3', 'v4'], 'other.txt')
    const d = run('session-dddd', '/tmp/dsh-replay-zyx987', ['v1', 'v2', 'v3', 'v1'])
    const norm = (log: SessionLog) => normaliseLog(log, { home: path.join(path.dirname(log.header.cwd), 'home') })
    expect(norm(b)).toEqual(norm(a))
    expect(norm(c)).not.toEqual(norm(a))
    // A message id used twice shows up as the same placeholder twice.
    expect(norm(d)).not.toEqual(norm(a))
  })

  it('replaces the longest match first and extra texts on request', () => {
    const log = logOf([user(`${WORK}/sub and ${WORK}2 and /real${WORK}`)], { cwd: WORK })
    const out = normaliseLog(log, { workspace: `${WORK}/sub`, replace: { [`/real${WORK}`]: '<real>' } })
    expect(JSON.stringify(out.events[0])).toContain('<workspace> and /tmp/dsh-record-abc123/work2 and <real>')
  })
})

describe('expected requests', () => {
  it('derives the role and tool-call sequence of each request from the log', () => {
    const log = logOf([
      header,
      system(),
      user('hi'),
      attempt({ code: 'SERVER', message: 'busy', status: 503 }),
      assistant([{ type: 'tool-call', id: 'c1', name: 'bash', arguments: '{}' }], { finish: 'tool-calls' }),
      toolResult('c1', 'out'),
      assistant([{ type: 'text', text: 'done' }], {}, 'm-a2'),
    ])
    const first = {
      model: 'deepseek-v4-flash',
      tools: ['bash', 'read'],
      messages: [{ role: 'system' }, { role: 'user' }],
    }
    expect(expectedRequests(log)).toEqual([
      first,
      first,
      {
        ...first,
        messages: [...first.messages, { role: 'assistant', toolCalls: ['c1'] }, { role: 'tool', toolCallId: 'c1' }],
      },
    ])
  })

  it('drops surface events that a later one replaces', () => {
    const log = logOf([
      header,
      system(),
      user('long history'),
      user('more', 'm-u2'),
      assistant([{ type: 'text', text: 'ok' }]),
    ])
    log.events[3] = { ...(log.events[3] as LoggedEvent), replaces: [2] }
    expect(expectedRequests(log)[0]?.messages).toEqual([{ role: 'system' }, { role: 'user' }])
  })

  it('summarises a request body the same way', () => {
    const body = {
      model: 'deepseek-v4-flash',
      tools: [{ type: 'function', function: { name: 'bash' } }],
      messages: [
        { role: 'system', content: 's' },
        { role: 'user', content: 'u' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'out' },
        { role: 'assistant', content: 'done' },
      ],
    }
    expect(describeRequest(body)).toEqual({
      model: 'deepseek-v4-flash',
      tools: ['bash'],
      messages: [
        { role: 'system' },
        { role: 'user' },
        { role: 'assistant', toolCalls: ['c1'] },
        { role: 'tool', toolCallId: 'c1' },
        { role: 'assistant', toolCalls: [] },
      ],
    })
    expect(() => describeRequest({})).toThrow(ReplayError)
  })
})

describe('scenarios', () => {
  it('checks scenario.json and names the file', () => {
    expect(parseScenario({ task: 'do it', exitCode: 0 })).toEqual({ task: 'do it', exitCode: 0 })
    expect(() => parseScenario({ exitCode: 0 }, 'x/scenario.json')).toThrow(/^x\/scenario\.json: "task"/)
    expect(() => parseScenario({ task: 't', exitCode: '0' })).toThrow(/"exitCode"/)
    expect(() => parseScenario({ task: 't', exitCode: 0, files: { '../up': 'x' } })).toThrow(/inside the workspace/)
    expect(() => parseScenario({ task: 't', exitCode: 0, args: [1] })).toThrow(/"args"/)
  })

  it('lays out home and workspace and writes the files', async () => {
    const scenario = parseScenario({
      task: 'fix it',
      args: ['--patch', 'p.yml'],
      exitCode: 0,
      files: { 'p.yml': '[]\n', 'src/a.txt': 'A' },
    })
    const { home, workspace } = await prepareRun(tmp, scenario)
    expect([home, workspace]).toEqual([path.join(tmp, 'home'), path.join(tmp, 'work')])
    expect(await readFile(path.join(workspace, 'src/a.txt'), 'utf8')).toBe('A')
    expect(scenarioArgs(scenario)).toEqual(['--profile', 'headless', '--patch', 'p.yml', 'fix it'])
  })
})
