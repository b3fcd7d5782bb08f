import { existsSync } from 'node:fs'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { type DshProcess, startDsh } from '@dsh/testkit'
import { afterEach, describe, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import { AcpTestClient } from './support/acp.ts'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { type RpcMessage, SdkWire } from './support/sdk-wire.ts'
import { readSessionLog } from './support/session-log.ts'

// The same behaviours of ctx.conversations, driven through each surface's real bin.
// A surface leaves out the behaviours its protocol has no method for.

const t = useMockedHeadless()

type Preset = 'read-only' | 'workspace-write' | 'danger-full-access'
type Answers = Array<{ question: string; selected: string[] }>
type Effort = 'off' | 'low' | 'high' | 'max'

interface Driver {
  newSession(preset?: Preset): Promise<string>
  /** Sends a prompt; resolves with how the turn stopped, in the surface's words. */
  prompt(sessionId: string, text: string): Promise<string>
  /** Resolves once the session's first tool call has started. */
  toolStarted(sessionId: string): Promise<void>
  cancel(sessionId: string): Promise<void>
  /** Ends the process, saving its sessions. */
  close(): Promise<void>
  fork?(sessionId: string): Promise<string>
  search?(query: string): Promise<string[]>
  setPreset?(sessionId: string, preset: Preset): Promise<void>
  /** Opens a stored session in this (new) process; resolves with the preset it runs under. */
  resumePreset?(sessionId: string): Promise<Preset>
  /** Answers the model's questions with `answers`; resolves with what the client was asked. */
  answerQuestions?(answers: Answers): () => RpcMessage[]
  /** Answers every approval request "allow for this session"; the result counts the requests so far. */
  allowForSession?(): () => number
  setPlanMode?(sessionId: string, on: boolean): Promise<void>
  /** Changes the session's model and reasoning effort. */
  setModel?(sessionId: string, model: string, reasoningEffort: Effort): Promise<void>
  /** Opens a stored session in this (new) process and sends it a prompt; resolves when the turn ends. */
  resumeAndPrompt?(sessionId: string, text: string): Promise<void>
  /** Steers the running turn with `text`. */
  steer?(sessionId: string, text: string): Promise<void>
  /** The surface's refusal of a steer when no turn runs, as `{code, field}` or an HTTP status. */
  steerIdle?(sessionId: string): Promise<unknown>
  /** Resolves once the surface has said that the prompt with `text` is queued (surfaces that say so). */
  queued?(sessionId: string, text: string): Promise<void>
}

interface Surface {
  name: string
  /** The optional behaviours its protocol has a method for. */
  has: Array<keyof Driver>
  start(): Promise<Driver>
}

const processes: DshProcess[] = []
afterEach(async () => {
  for (const proc of processes.splice(0))
    if (proc.child.exitCode === null && proc.child.signalCode === null) await proc.kill('SIGKILL')
})

// --- web: `dsh web` over HTTP and its socket ----------------------------------

async function startWeb(): Promise<Driver> {
  const proc = startDsh(['web', '--port', '0', '--no-open'], { home: t.home, cwd: t.work, env: t.env() })
  processes.push(proc)
  const match = await proc.waitFor(/^dsh web: http:\/\/127\.0\.0\.1:(\d+)(?:\/#token=(\S+))?\n/m, {
    stream: 'stdout',
    timeoutMs: 60_000,
  })
  const base = `http://127.0.0.1:${match[1]}`
  const auth: Record<string, string> = match[2] ? { authorization: `Bearer ${match[2]}` } : {}
  const api = async (method: string, url: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, json: await res.json() }
  }
  const ws = new WebSocket(`ws://127.0.0.1:${match[1]}/api/ws${match[2] ? `?token=${match[2]}` : ''}`)
  const frames: RpcMessage[] = []
  ws.on('message', (data) => frames.push(JSON.parse(String(data))))
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  const frame = (match: (f: RpcMessage) => boolean, from = 0) =>
    vi.waitFor(
      () => {
        const found = frames.slice(from).find(match)
        if (!found) throw new Error('no such frame yet')
        return found
      },
      { timeout: 20_000, interval: 20 },
    )
  const queuedTexts = new Map<string, boolean>()
  const isEvent = (sessionId: string, type: string) => (f: RpcMessage) =>
    f.type === 'event' && f.sessionId === sessionId && f.event.type === type
  const subscribe = (sessionId: string) => ws.send(JSON.stringify({ type: 'subscribe', sessionId }))
  const session = async (sessionId: string) => (await api('GET', `/api/sessions/${sessionId}`)).json.session
  const resumeAndPrompt = async (sessionId: string, text: string) => {
    // A stored session opens read-only; the first message resumes it in this process.
    subscribe(sessionId)
    const from = frames.length
    expect((await api('POST', `/api/sessions/${sessionId}/messages`, { text })).status).toBe(202)
    await frame(isEvent(sessionId, 'turn/end'), from)
  }
  return {
    async newSession(preset) {
      const created = await api('POST', '/api/sessions', preset ? { permissionPreset: preset } : {})
      expect(created.status).toBe(201)
      subscribe(created.json.sessionId)
      return created.json.sessionId
    },
    async prompt(sessionId, text) {
      const from = frames.length
      const sent = await api('POST', `/api/sessions/${sessionId}/messages`, { text })
      expect(sent.status).toBe(202)
      queuedTexts.set(text, sent.json.queued)
      // The turn/end after this message's own user/message event.
      const isMine = (f: RpcMessage) =>
        isEvent(sessionId, 'user/message')(f) && JSON.stringify(f.event.data.message.content).includes(text)
      const mine = frames.indexOf(await frame(isMine, from))
      return (await frame(isEvent(sessionId, 'turn/end'), mine)).event.data.reason
    },
    async queued(_sessionId, text) {
      await vi.waitFor(() => expect(queuedTexts.get(text)).toBe(true), { timeout: 20_000, interval: 20 })
    },
    async steer(sessionId, text) {
      expect((await api('POST', `/api/sessions/${sessionId}/steer`, { text })).status).toBe(202)
    },
    async steerIdle(sessionId) {
      const refused = await api('POST', `/api/sessions/${sessionId}/steer`, { text: 'too late' })
      return { status: refused.status, message: refused.json.error?.message ?? refused.json.message }
    },
    async toolStarted(sessionId) {
      await frame(isEvent(sessionId, 'tool/call'))
    },
    async cancel(sessionId) {
      expect((await api('POST', `/api/sessions/${sessionId}/cancel`)).status).toBe(200)
    },
    async close() {
      ws.close()
      await proc.kill('SIGTERM')
    },
    async fork(sessionId) {
      const fork = await api('POST', `/api/sessions/${sessionId}/fork`, {})
      expect(fork.status).toBe(201)
      return fork.json.sessionId
    },
    async search(query) {
      const found = await api('GET', `/api/sessions?query=${encodeURIComponent(query)}`)
      return found.json.sessions.map((s: RpcMessage) => s.sessionId)
    },
    async setPreset(sessionId, preset) {
      expect((await api('PATCH', `/api/sessions/${sessionId}`, { permissionPreset: preset })).status).toBe(200)
    },
    async resumePreset(sessionId) {
      await resumeAndPrompt(sessionId, 'go on')
      return (await session(sessionId)).permissionPreset
    },
    resumeAndPrompt,
    async setPlanMode(sessionId, on) {
      expect((await api('PATCH', `/api/sessions/${sessionId}`, { planMode: on })).status).toBe(200)
    },
    async setModel(sessionId, model, reasoningEffort) {
      expect((await api('PATCH', `/api/sessions/${sessionId}`, { model, reasoningEffort })).status).toBe(200)
    },
    allowForSession() {
      let asked = 0
      ws.on('message', async (data) => {
        const f = JSON.parse(String(data))
        if (f.type !== 'approval') return
        asked++
        await api('POST', `/api/approvals/${f.requestId}`, { decision: 'allow-session' })
      })
      return () => asked
    },
    answerQuestions(answers) {
      const asked: RpcMessage[] = []
      const seen = new Set<string>()
      ws.on('message', async (data) => {
        const f = JSON.parse(String(data))
        if (f.type !== 'question' || seen.has(f.requestId)) return
        seen.add(f.requestId)
        asked.push(f)
        await api('POST', `/api/questions/${f.requestId}`, { answers })
      })
      return () => asked.map((f) => f.questions)
    },
  }
}

// --- SDK: `dsh --profile sdk` over stdio ---------------------------------------

async function startSdk(): Promise<Driver> {
  const wire = new SdkWire(['--profile', 'sdk'], { home: t.home, cwd: t.work, env: t.env() })
  processes.push(wire.proc)
  await wire.call('initialize', { protocolVersion: 1, capabilities: { questions: true, approvals: true } })
  const answers: Record<string, unknown> = { 'approval/request': { decision: 'reject' } }
  wire.answer = (request) => answers[request.method]
  const configure = (sessionId: string, settings: Record<string, unknown>) =>
    wire.call('session/configure', { sessionId, ...settings })
  return {
    async newSession(preset) {
      return (await wire.call('session/new', { cwd: t.work, ...(preset ? { permissionPreset: preset } : {}) }))
        .sessionId
    },
    async prompt(sessionId, text) {
      return (await wire.call('session/prompt', { sessionId, content: text })).stopReason
    },
    async queued(sessionId, text) {
      const sent = wire.entries
        .flatMap((e) => ('send' in e ? [e.send] : []))
        .find((m) => m.method === 'session/prompt' && m.params.content === text)
      expect(sent).toBeDefined()
      const notice = await wire.waitFor(
        (m) => m.method === 'session/queued' && m.params.id === sent?.id,
        'the queued notification',
      )
      expect(notice.params).toEqual({ sessionId, id: sent?.id, position: 1 })
    },
    async steer(sessionId, text) {
      expect(await wire.call('session/steer', { sessionId, content: text })).toEqual({})
    },
    async steerIdle(sessionId) {
      const refused = (await wire.request('session/steer', { sessionId, content: 'too late' })).error
      return { code: refused.code, field: refused.data?.field, message: refused.message }
    },
    async toolStarted(sessionId) {
      await wire.waitFor(
        (m) => m.method === 'session/event' && m.params.sessionId === sessionId && m.params.event.type === 'tool/call',
        'the tool call',
      )
    },
    async cancel(sessionId) {
      expect(await wire.call('session/cancel', { sessionId })).toEqual({})
    },
    async close() {
      expect((await wire.shutdown()).code).toBe(0)
    },
    async fork(sessionId) {
      return (await wire.call('session/fork', { sessionId })).sessionId
    },
    async search(query) {
      return (await wire.call('session/list', { query })).sessions.map((s: RpcMessage) => s.sessionId)
    },
    answerQuestions(given) {
      answers['question/ask'] = { answers: given }
      return () => wire.received.filter((m) => m.method === 'question/ask').map((m) => m.params.questions)
    },
    allowForSession() {
      answers['approval/request'] = { decision: 'allow-session' }
      return () => wire.received.filter((m) => m.method === 'approval/request').length
    },
    async setPlanMode(sessionId, on) {
      // `/plan` and `/plan off` are session/configure {planMode}.
      const done = await wire.call('session/prompt', { sessionId, content: on ? '/plan' : '/plan off' })
      expect(done.text).toContain(on ? 'Plan mode is on' : 'Plan mode is off')
      expect(await configure(sessionId, {})).toMatchObject({ planMode: on })
    },
    async setPreset(sessionId, preset) {
      expect(await configure(sessionId, { preset })).toMatchObject({ preset })
    },
    async setModel(sessionId, model, reasoningEffort) {
      expect(await configure(sessionId, { model, reasoningEffort })).toMatchObject({ model, reasoningEffort })
    },
    async resumePreset(sessionId) {
      await wire.call('session/resume', { sessionId })
      return (await configure(sessionId, {})).preset
    },
    async resumeAndPrompt(sessionId, text) {
      await wire.call('session/resume', { sessionId })
      expect((await wire.call('session/prompt', { sessionId, content: text })).stopReason).toBe('completed')
    },
  }
}

// --- ACP: `dsh --profile acp` through the ACP library's client ----------------

async function startAcp(): Promise<Driver> {
  const client = new AcpTestClient({ home: t.home, cwd: t.work, env: t.env() })
  processes.push(client.process)
  await client.initialize()
  return {
    async newSession(preset) {
      const { sessionId } = await client.newSession()
      if (preset) await client.agent.request('session/set_mode', { sessionId, modeId: preset })
      return sessionId
    },
    async prompt(sessionId, text) {
      return (await client.prompt(sessionId, text)).stopReason
    },
    async toolStarted(sessionId) {
      await vi.waitFor(
        () => expect(client.updatesOf(sessionId).some((u) => u.sessionUpdate === 'tool_call')).toBe(true),
        { timeout: 20_000, interval: 20 },
      )
    },
    async cancel(sessionId) {
      await client.agent.notify('session/cancel', { sessionId })
    },
    async close() {
      expect((await client.close()).code).toBe(0)
    },
    async setPreset(sessionId, preset) {
      await client.agent.request('session/set_mode', { sessionId, modeId: preset })
    },
    async resumePreset(sessionId) {
      const loaded = await client.agent.request('session/load', { sessionId, cwd: t.work, mcpServers: [] })
      return loaded.modes?.currentModeId as Preset
    },
    async setPlanMode(sessionId, on) {
      await client.agent.request('session/set_mode', { sessionId, modeId: on ? 'plan' : 'workspace-write' })
      await vi.waitFor(
        () =>
          expect(client.updatesOf(sessionId).findLast((u) => u.sessionUpdate === 'current_mode_update')).toMatchObject({
            currentModeId: on ? 'plan' : 'workspace-write',
          }),
        { timeout: 20_000, interval: 20 },
      )
    },
    allowForSession() {
      client.permissionAnswers.push(...Array.from({ length: 10 }, () => 'allow_always' as const))
      return () => client.permissionRequests.length
    },
  }
}

const surfaces: Surface[] = [
  {
    name: 'web API',
    start: startWeb,
    has: ['fork', 'search', 'setPreset', 'answerQuestions', 'allowForSession', 'setPlanMode', 'setModel', 'steer'],
  },
  {
    name: 'SDK',
    start: startSdk,
    has: ['fork', 'search', 'setPreset', 'answerQuestions', 'allowForSession', 'setPlanMode', 'setModel', 'steer'],
  },
  { name: 'ACP', start: startAcp, has: ['setPreset', 'allowForSession', 'setPlanMode'] },
]

/** The reason each surface reports for a turn stopped by the user. */
const CANCELLED: Record<string, string> = { 'web API': 'aborted', SDK: 'cancelled', ACP: 'cancelled' }
/** The reason each surface reports for a turn that ran to its end. */
const COMPLETED: Record<string, string> = { 'web API': 'completed', SDK: 'completed', ACP: 'end_turn' }

const presetsLogged = async (sessionId: string) =>
  (await readSessionLog(t.home, sessionId)).events.filter((e) => e.type === 'permission/preset').map((e) => e.data)

const able = (behaviour: keyof Driver) => surfaces.filter((s) => s.has.includes(behaviour))

describe.each(surfaces)('the conversation contract through the $name', { timeout: 90_000 }, (surface) => {
  it('cancel stops a running tool: the tool result says cancelled and the prompt ends', async () => {
    t.mock.enqueue(
      reply.toolCalls([{ name: 'bash', arguments: { description: 'Run a command', command: 'sleep 30' } }]),
      reply.text('Stopped.'),
    )
    const dsh = await surface.start()
    const sessionId = await dsh.newSession()
    const pending = dsh.prompt(sessionId, 'wait a while')
    await dsh.toolStarted(sessionId)
    await dsh.cancel(sessionId)
    expect(await pending).toBe(CANCELLED[surface.name])
    await dsh.close()
    const { events } = await readSessionLog(t.home, sessionId)
    const result = events.find((e) => e.type === 'tool/result')
    expect(result?.data).toMatchObject({ name: 'bash', error: { code: 'CANCELLED' } })
    expect(JSON.stringify(result?.data.message)).toContain('the tool call was cancelled before it finished.')
    expect(events.findLast((e) => e.type === 'turn/end')?.data).toMatchObject({ reason: 'aborted' })
  })
})

describe.each(able('fork'))('fork through the $name', { timeout: 90_000 }, (surface) => {
  it('copies the preset and the plan mode of the source session', async () => {
    t.mock.enqueue(reply.text('First.'))
    const dsh = await surface.start()
    const sessionId = await dsh.newSession('danger-full-access')
    expect(await dsh.prompt(sessionId, 'one')).toBe(COMPLETED[surface.name])
    await dsh.setPlanMode?.(sessionId, true)
    const fork = await dsh.fork?.(sessionId)
    expect(fork).toBeDefined()
    expect(fork).not.toBe(sessionId)
    await dsh.close()
    expect((await presetsLogged(fork as string)).at(-1)).toEqual({ preset: 'danger-full-access' })
    const forked = await readSessionLog(t.home, fork as string)
    expect(forked.header).toMatchObject({ forkedFrom: sessionId })
    expect(forked.events.findLast((e) => e.type === 'plan/mode')?.data).toMatchObject({ active: true })
  })
})

describe.each(able('allowForSession'))('approvals through the $name', { timeout: 90_000 }, (surface) => {
  it('"allow for this session" is asked once: a second call of the same kind runs without asking', async () => {
    const outside = path.join(t.root, 'outside')
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: path.join(outside, 'one.txt'), content: '1' } }]),
      reply.toolCalls([{ name: 'write', arguments: { file_path: path.join(outside, 'two.txt'), content: '2' } }]),
      reply.text('Both written.'),
    )
    const dsh = await surface.start()
    const asked = dsh.allowForSession?.() as () => number
    const sessionId = await dsh.newSession()
    expect(await dsh.prompt(sessionId, 'write two files outside')).toBe(COMPLETED[surface.name])
    expect(asked()).toBe(1)
    await dsh.close()
    const decisions = (await readSessionLog(t.home, sessionId)).events
      .filter((e) => e.type === 'permission/decision')
      .map((e) => [e.data.decision, e.data.answer])
    expect(decisions).toEqual([
      ['ask', 'allow-session'],
      ['allow', undefined],
    ])
    const results = (await readSessionLog(t.home, sessionId)).events.filter((e) => e.type === 'tool/result')
    expect(results.map((e) => e.data.error ?? null)).toEqual([null, null])
  })
})

describe.each(able('setModel'))('model settings through the $name', { timeout: 90_000 }, (surface) => {
  it('a per-session model and reasoning effort change is logged and survives resume in a new process', async () => {
    const first = await surface.start()
    const sessionId = await first.newSession()
    await first.setModel?.(sessionId, 'deepseek-v4-pro', 'max')
    await first.close()
    const logged = (await readSessionLog(t.home, sessionId)).events.filter((e) => e.type === 'conversation/settings')
    expect(logged.at(-1)?.data).toMatchObject({ model: 'deepseek-v4-pro', reasoningEffort: 'max' })
    t.mock.enqueue(reply.text('Resumed.'))
    const second = await surface.start()
    await second.resumeAndPrompt?.(sessionId, 'go on')
    expect(t.mock.requests.at(-1)?.body).toMatchObject({ model: 'deepseek-v4-pro', reasoning_effort: 'max' })
    await second.close()
  })
})

describe.each(able('search'))('search through the $name', { timeout: 90_000 }, (surface) => {
  it('finds the session by a part of its folder', async () => {
    t.mock.enqueue(reply.text('Hello.'))
    const dsh = await surface.start()
    const sessionId = await dsh.newSession()
    await dsh.prompt(sessionId, 'hello')
    expect(await dsh.search?.(path.basename(t.work))).toContain(sessionId)
    expect(await dsh.search?.('no-folder-has-this-name')).not.toContain(sessionId)
    await dsh.close()
  })
})

describe.each(able('setPreset'))('session settings through the $name', { timeout: 90_000 }, (surface) => {
  it('a per-session preset change is logged and survives resume in a new process', async () => {
    const first = await surface.start()
    const sessionId = await first.newSession()
    await first.setPreset?.(sessionId, 'read-only')
    await first.close()
    expect((await presetsLogged(sessionId)).at(-1)).toEqual({ preset: 'read-only' })
    t.mock.enqueue(reply.text('Resumed.'))
    const second = await surface.start()
    expect(await second.resumePreset?.(sessionId)).toBe('read-only')
    await second.close()
  })
})

describe.each(able('answerQuestions'))('questions through the $name', { timeout: 90_000 }, (surface) => {
  it('a question reaches the client and its answer reaches the model', async () => {
    const question = {
      id: 'colour',
      question: 'Which colour?',
      header: 'Colour',
      options: [{ label: 'red' }, { label: 'blue' }],
    }
    t.mock.enqueue(
      reply.toolCalls([{ name: 'ask_user_question', arguments: { questions: [question] } }]),
      reply.text('Blue it is.'),
    )
    const dsh = await surface.start()
    const sessionId = await dsh.newSession()
    const asked = dsh.answerQuestions?.([{ question: 'Which colour?', selected: ['blue'] }])
    expect(await dsh.prompt(sessionId, 'ask me')).toBe(COMPLETED[surface.name])
    expect(asked?.()).toEqual([[question]])
    const toolMessage = t.mock.requests[1]?.body.messages.find((m: RpcMessage) => m.role === 'tool')
    expect(JSON.stringify(toolMessage.content)).toContain('blue')
    await dsh.close()
  })
})

/** A model step held until `release()`: the turn is running meanwhile. */
function heldStep(answer: ReturnType<typeof reply.text>) {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  t.mock.enqueue(async () => {
    await gate
    return answer
  })
  return { release }
}

const REFUSED_STEER: Record<string, unknown> = {
  'web API': { status: 400, message: expect.stringContaining('is not running a turn') },
  SDK: { code: -32602, field: 'sessionId', message: expect.stringContaining('is not running a turn') },
}

describe.each(surfaces)('queueing through the $name', { timeout: 90_000 }, (surface) => {
  it('a prompt sent while a turn runs is queued and runs as its own turn once that one ends', async () => {
    const first = heldStep(reply.text('First answer.'))
    t.mock.enqueue(reply.text('Second answer.'))
    const dsh = await surface.start()
    const sessionId = await dsh.newSession()
    const one = dsh.prompt(sessionId, 'the first prompt')
    await t.mock.waitForRequests(1)
    const two = dsh.prompt(sessionId, 'the queued prompt')
    await dsh.queued?.(sessionId, 'the queued prompt')
    first.release()
    expect(await one).toBe(COMPLETED[surface.name])
    expect(await two).toBe(COMPLETED[surface.name])
    const second = JSON.stringify(t.mock.requests[1]?.body.messages)
    expect(second).toContain('First answer.')
    expect(second).toContain('the queued prompt')
    await dsh.close()
    const ends = (await readSessionLog(t.home, sessionId)).events.filter((e) => e.type === 'turn/end')
    expect(ends.map((e) => [e.data.turn, e.data.reason])).toEqual([
      [1, 'completed'],
      [2, 'completed'],
    ])
  })
})

describe.each(able('steer'))('steering through the $name', { timeout: 90_000 }, (surface) => {
  it('a steer while a tool call runs reaches the next request of the same turn; a steer with no turn is refused', async () => {
    const first = heldStep(
      reply.toolCalls([{ name: 'bash', arguments: { command: 'echo working', description: 'run a command' } }]),
    )
    t.mock.enqueue(reply.text('Done, and steered.'))
    const dsh = await surface.start()
    const sessionId = await dsh.newSession()
    const running = dsh.prompt(sessionId, 'start working')
    await t.mock.waitForRequests(1)
    await dsh.steer?.(sessionId, 'please also mention the weather')
    first.release()
    expect(await running).toBe(COMPLETED[surface.name])
    expect(t.mock.requests).toHaveLength(2)
    const messages = t.mock.requests[1]?.body.messages as RpcMessage[]
    expect(messages.at(-1)).toMatchObject({ role: 'user' })
    expect(JSON.stringify(messages.at(-1)?.content)).toContain('please also mention the weather')
    expect(messages.some((m) => m.role === 'tool')).toBe(true)
    expect(await dsh.steerIdle?.(sessionId)).toEqual(REFUSED_STEER[surface.name])
    await dsh.close()
    const ends = (await readSessionLog(t.home, sessionId)).events.filter((e) => e.type === 'turn/end')
    expect(ends).toHaveLength(1)
  })
})

describe.each(able('setPlanMode'))('plan mode through the $name', { timeout: 90_000 }, (surface) => {
  it('plan mode on refuses a write in the workspace; turned off, the write runs', async () => {
    const write = (name: string) =>
      reply.toolCalls([{ name: 'write', arguments: { file_path: path.join(t.work, name), content: 'x' } }])
    t.mock.enqueue(write('planned.txt'), reply.text('I am planning.'), write('done.txt'), reply.text('Written.'))
    const dsh = await surface.start()
    const sessionId = await dsh.newSession()
    await dsh.setPlanMode?.(sessionId, true)
    expect(await dsh.prompt(sessionId, 'write a file')).toBe(COMPLETED[surface.name])
    expect(existsSync(path.join(t.work, 'planned.txt'))).toBe(false)
    await dsh.setPlanMode?.(sessionId, false)
    expect(await dsh.prompt(sessionId, 'now write it')).toBe(COMPLETED[surface.name])
    await dsh.close()
    const { events } = await readSessionLog(t.home, sessionId)
    expect(events.filter((e) => e.type === 'plan/mode').map((e) => e.data.active)).toEqual([true, false])
    const results = events.filter((e) => e.type === 'tool/result').map((e) => e.data)
    expect(results[0]).toMatchObject({ name: 'write', error: { code: 'DENIED' } })
    expect(JSON.stringify(results[0]?.message)).toContain('plan mode')
    expect(results[1]?.error).toBeUndefined()
  })
})
