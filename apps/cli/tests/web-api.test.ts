import { existsSync, readFileSync, statSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { type IncomingHttpHeaders, request as httpRequest } from 'node:http'
import path from 'node:path'
import { type MockLlm, type RecordedRequest, reply, startMockLlm } from '@dsh/llm-mock'
import { type DshProcess, runDsh, startDsh, tempDir } from '@dsh/testkit'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import { readSessionLog, streamedText } from './support/session-log.ts'

// --- the model: answers by what the last message asks for --------------------

let gate: Promise<void> | undefined

function textOf(message: { content?: unknown } | undefined): string {
  const content = message?.content
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map((part: { text?: string }) => part.text ?? '').join('')
  return ''
}

async function model(req: RecordedRequest) {
  const last = req.body?.messages?.at(-1)
  if (last?.role === 'tool') {
    if (gate) await gate
    return reply.text(`tool said: ${textOf(last).slice(0, 40)}`)
  }
  const text = textOf(last)
  const write = /^write (\S+) (.+)$/.exec(text)
  if (write) return reply.toolCalls([{ name: 'write', arguments: { file_path: write[1], content: write[2] } }])
  if (text.startsWith('list')) return reply.toolCalls([{ name: 'ls', arguments: {} }])
  if (text.startsWith('ask')) {
    const questions = [
      {
        id: 'color',
        question: 'Which color?',
        header: 'Color',
        options: [{ label: 'Red' }, { label: 'Blue', description: 'Calm.' }],
      },
    ]
    return reply.toolCalls([{ name: 'ask_user_question', arguments: { questions } }])
  }
  if (text.startsWith('slow')) return reply.text(`slow answer to ${text}: one two three four five six`, { delayMs: 15 })
  return reply.text(`echo: ${text}`, { reasoning: 'Thinking it over.' })
}

// --- HTTP and socket clients ------------------------------------------------

interface Reply {
  status: number
  headers: IncomingHttpHeaders
  text: string
  json: any
}

interface CallOptions {
  body?: unknown
  raw?: string | Buffer
  headers?: Record<string, string>
}

function call(port: number, method: string, urlPath: string, options: CallOptions = {}): Promise<Reply> {
  const raw = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body))
  const headers: Record<string, string> = {
    host: `127.0.0.1:${port}`,
    ...(raw !== undefined ? { 'content-type': 'application/json' } : {}),
    ...options.headers,
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path: urlPath, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          json = undefined
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
      })
    })
    req.on('error', reject)
    req.end(raw)
  })
}

type Frame = Record<string, any>

class Socket {
  readonly frames: Frame[] = []
  private readonly listeners = new Set<() => void>()
  readonly closed: Promise<void>

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)))
      for (const listener of this.listeners) listener()
    })
    this.closed = new Promise((resolve) => ws.once('close', () => resolve()))
  }

  static open(url: string, options: WebSocket.ClientOptions = {}): Promise<Socket> {
    const ws = new WebSocket(url, options)
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Socket(ws)))
      ws.once('error', reject)
    })
  }

  /** Opens a socket that the server is expected to refuse; resolves with the HTTP status and error body. */
  static refused(url: string, options: WebSocket.ClientOptions = {}): Promise<{ status: number; body: any }> {
    const ws = new WebSocket(url, options)
    return new Promise((resolve, reject) => {
      ws.once('open', () => reject(new Error('the socket was accepted')))
      ws.once('unexpected-response', (_req, res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
      })
      ws.once('error', () => undefined)
    })
  }

  send(frame: Frame): void {
    this.ws.send(JSON.stringify(frame))
  }

  /** The first frame at or after `from` that matches; waits for it. */
  next(match: (frame: Frame) => boolean, from = 0): Promise<Frame> {
    const found = () => this.frames.slice(from).find(match)
    return new Promise((resolve, reject) => {
      const check = () => {
        const frame = found()
        if (!frame) return
        this.listeners.delete(check)
        clearTimeout(timer)
        resolve(frame)
      }
      const timer = setTimeout(() => {
        this.listeners.delete(check)
        reject(
          new Error(`no matching frame; got:\n${this.frames.map((f) => JSON.stringify(f).slice(0, 200)).join('\n')}`),
        )
      }, 20_000)
      this.listeners.add(check)
      check()
    })
  }

  events(sessionId: string): any[] {
    return this.frames.filter((f) => f.type === 'event' && f.sessionId === sessionId).map((f) => f.event)
  }

  close(): Promise<void> {
    this.ws.close()
    return this.closed
  }
}

const turnEnd = (sessionId: string, turn?: number) => (f: Frame) =>
  f.type === 'event' &&
  f.sessionId === sessionId &&
  f.event.type === 'turn/end' &&
  (turn === undefined || f.event.data.turn === turn)

/** Waits for the end of a turn (the last `turn/end` matching) and the idle status after it. */
async function settled(socket: Socket, sessionId: string, turn?: number, from = 0): Promise<Frame> {
  const end = await socket.next(turnEnd(sessionId, turn), from)
  await socket.next(
    (f) => f.type === 'status' && f.sessionId === sessionId && f.status === 'idle',
    socket.frames.indexOf(end),
  )
  return end
}

// --- a running `dsh web` ----------------------------------------------------

interface WebApp {
  proc: DshProcess
  port: number
  url: string
  token?: string
  home: string
  work: string
  api(method: string, urlPath: string, body?: unknown): Promise<Reply>
  socket(): Promise<Socket>
}

async function startWeb(
  mock: MockLlm,
  root: string,
  args: string[] = [],
  env: Record<string, string> = {},
  launcherArgs: string[] = [],
): Promise<WebApp> {
  const home = path.join(root, 'home')
  const work = path.join(root, 'work')
  await mkdir(work, { recursive: true })
  const proc = startDsh(['web', ...launcherArgs, '--port', '0', '--no-open', ...args], {
    home,
    cwd: work,
    env: { DEEPSEEK_BASE_URL: mock.url, DEEPSEEK_API_KEY: 'sk-test-key', ...env },
  })
  const match = await proc.waitFor(/^dsh web: (http:\/\/127\.0\.0\.1:(\d+)(?:\/#token=(\S+))?)\n/m, {
    stream: 'stdout',
    timeoutMs: 60_000,
  })
  const port = Number(match[2])
  const token = match[3]
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
  return {
    proc,
    port,
    url: match[1] as string,
    ...(token ? { token } : {}),
    home,
    work,
    api: (method, urlPath, body) =>
      call(port, method, urlPath, { ...(body === undefined ? {} : { body }), headers: auth }),
    socket: () => Socket.open(`ws://127.0.0.1:${port}/api/ws${token ? `?token=${token}` : ''}`),
  }
}

// --- the shared server ------------------------------------------------------

describe('dsh web API', () => {
  let mock: MockLlm
  let app: WebApp
  let cleanup: () => Promise<void>
  let root: string
  const sockets: Socket[] = []
  const open = async () => {
    const socket = await app.socket()
    sockets.push(socket)
    return socket
  }

  beforeAll(async () => {
    mock = await startMockLlm()
    ;({ dir: root, dispose: cleanup } = await tempDir())
    // No built app at this path, whatever apps/web/dist holds right now.
    const patch = path.join(root, 'no-dist.patch.yml')
    await writeFile(
      patch,
      [
        '- id: web-server',
        '  config:',
        "    host: !!js ctx.webStartup.host ?? '127.0.0.1'",
        '    port: !!js ctx.webStartup.port ?? 3080',
        '    trustedHosts: !!js ctx.webStartup.trustedHosts',
        '    openBrowser: !!js ctx.webStartup.openBrowser',
        `    staticDir: ${JSON.stringify(path.join(root, 'no-dist'))}`,
        // A tool no dsh package knows by name, presenting itself.
        '- insert:',
        '    - id: deploy-tool',
        `      name: ${JSON.stringify(path.join(import.meta.dirname, 'fixtures/deploy-tool.mjs'))}`,
        '',
      ].join('\n'),
    )
    app = await startWeb(mock, root, ['--trusted-host', 'devbox.lan'], {}, ['--patch', patch])
  }, 120_000)

  afterAll(async () => {
    await app?.proc.kill('SIGTERM')
    await mock?.close()
    await cleanup?.()
  })

  beforeEach(() => {
    mock.reset()
    mock.setFallback(model)
    gate = undefined
  })

  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((s) => s.close()))
  })

  const newSession = async (body: Record<string, unknown> = {}): Promise<string> => {
    const created = await app.api('POST', '/api/sessions', body)
    expect(created.status).toBe(201)
    return created.json.sessionId
  }

  describe('routes', () => {
    it('GET /api/info describes the server', async () => {
      const info = await app.api('GET', '/api/info')
      expect(info.status).toBe(200)
      expect(info.json).toMatchObject({
        launchCwd: app.work,
        home: app.home,
        defaultModel: 'deepseek-v4-flash',
        provider: 'deepseek',
        presets: ['read-only', 'workspace-write', 'danger-full-access'],
        reasoningEfforts: ['off', 'low', 'high', 'max'],
        auth: false,
      })
      expect(info.json.models).toContain('deepseek-v4-pro')
      expect(info.json.version).toMatch(/^\d+\.\d+\.\d+/)
    })

    it('answers POST /api/sessions once the session is stored: a crash after it leaves a session to open', async () => {
      const id = await newSession()
      const log = readFileSync(path.join(app.home, 'sessions', `${id}.jsonl`), 'utf8')
      expect(JSON.parse(log.split('\n')[0] as string)).toMatchObject({ type: 'session', id, cwd: app.work })
    })

    it('never shows a loaded credential: a tool result and a streamed reply holding the key come back redacted', async () => {
      // The key is this server's DEEPSEEK_API_KEY; the command prints it without spelling it.
      mock.setFallback((req) =>
        req.body.messages.at(-1)?.role === 'tool'
          ? reply.text('Found it: sk-test-key is your key.', { chunkSize: 3 })
          : reply.toolCalls([
              { name: 'bash', arguments: { description: 'Run a command', command: "printf '%s%s\\n' sk-test- key" } },
            ]),
      )
      const id = await newSession()
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      await socket.next((f) => f.type === 'subscribed' && f.sessionId === id)
      expect((await app.api('POST', `/api/sessions/${id}/messages`, { text: 'print the key' })).status).toBe(202)
      await settled(socket, id)

      const read = await app.api('GET', `/api/sessions/${id}`)
      const older = await app.api('GET', `/api/sessions/${id}/events?before=1000`)
      for (const shown of [read.text, older.text, JSON.stringify(socket.frames)]) {
        expect(shown).not.toContain('sk-test-key')
        expect(shown).toContain('[redacted: DEEPSEEK_API_KEY]')
      }
      const result = read.json.events.find((e: { type: string }) => e.type === 'tool/result')
      expect(JSON.stringify(result.data.message.content)).toContain('[redacted: DEEPSEEK_API_KEY]')
      const answer = read.json.events.findLast((e: { type: string }) => e.type === 'assistant/message')
      expect(answer.data.message.content).toEqual([
        { type: 'text', text: 'Found it: [redacted: DEEPSEEK_API_KEY] is your key.' },
      ])
      // What went back to the model is what was logged.
      const tool = mock.requests.at(-1)?.body.messages.find((m: { role: string }) => m.role === 'tool')
      expect(tool.content).toContain('[redacted: DEEPSEEK_API_KEY]')
      expect(mock.requests.at(-1)?.rawBody).not.toContain('sk-test-key')
    })

    it("lists a session's background jobs with their output, redacted: GET /api/sessions/:id/activity", async () => {
      // The job prints the key without spelling it in its command, then keeps running.
      const command = "printf '%s%s\\n' sk-test- key; echo activity-marker; sleep 60"
      mock.setFallback((req) =>
        req.body.messages.at(-1)?.role === 'tool'
          ? reply.text('Started it.')
          : reply.toolCalls([
              { name: 'bash', arguments: { description: 'Watch the logs', command, run_in_background: true } },
            ]),
      )
      const id = await newSession()
      const before = await app.api('GET', `/api/sessions/${id}/activity`)
      expect(before.status).toBe(200)
      expect(before.json).toEqual({ jobs: [], terminals: [], subagents: [] })

      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      await socket.next((f) => f.type === 'subscribed' && f.sessionId === id)
      expect((await app.api('POST', `/api/sessions/${id}/messages`, { text: 'start the watcher' })).status).toBe(202)
      await settled(socket, id)

      let activity: Reply | undefined
      await vi.waitFor(
        async () => {
          activity = await app.api('GET', `/api/sessions/${id}/activity`)
          expect(activity.json.jobs[0]?.output.text).toContain('activity-marker')
        },
        { timeout: 20_000, interval: 100 },
      )
      const [job] = activity?.json.jobs ?? []
      expect(job).toMatchObject({ label: 'Watch the logs', status: { state: 'running' }, output: { omittedBytes: 0 } })
      expect(job.id).toMatch(/^job-\d+$/)
      expect(job.output.text).toBe('[redacted: DEEPSEEK_API_KEY]\nactivity-marker\n')
      expect(activity?.text).not.toContain('sk-test-key')
      expect(activity?.json.terminals).toEqual([])

      // Another session sees none of it; a bad or unknown id is refused.
      const other = await newSession()
      expect((await app.api('GET', `/api/sessions/${other}/activity`)).json.jobs).toEqual([])
      const unknown = await app.api('GET', '/api/sessions/no-such-session/activity')
      expect(unknown.status).toBe(404)
      expect(unknown.json.error.code).toBe('unknown-session')
      const bad = await app.api('GET', '/api/sessions/..%2f..%2fetc%2fpasswd/activity')
      expect(bad.status).toBe(400)
      expect(bad.json.error.message).toMatch(/^id: /)
      await app.api('POST', `/api/sessions/${id}/cancel`)
    })

    it('streams a prompt over the socket: events, deltas and status', async () => {
      const id = await newSession()
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      expect(await socket.next((f) => f.type === 'subscribed')).toEqual({
        type: 'subscribed',
        sessionId: id,
        lastSeq: -1,
        running: false,
      })

      const sent = await app.api('POST', `/api/sessions/${id}/messages`, { text: 'hello there' })
      expect(sent).toMatchObject({ status: 202, json: { queued: false } })
      await settled(socket, id)

      const events = socket.events(id)
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
      expect(events.find((e) => e.type === 'user/message').data.message.content).toEqual([
        { type: 'text', text: 'hello there' },
      ])
      const answer = events.find((e) => e.type === 'assistant/message').data.message.content
      expect(answer).toEqual([
        { type: 'reasoning', text: 'Thinking it over.' },
        { type: 'text', text: 'echo: hello there' },
      ])
      const deltas = socket.frames.filter((f) => f.type === 'delta' && f.sessionId === id).map((f) => f.delta)
      expect(streamedText(deltas, 'text')).toBe('echo: hello there')
      expect(streamedText(deltas, 'reasoning')).toBe('Thinking it over.')
      const statuses = socket.frames.filter((f) => f.type === 'status' && f.sessionId === id).map((f) => f.status)
      expect(statuses).toEqual(['running', 'idle'])
      expect(socket.frames.some((f) => f.type === 'sessions-changed')).toBe(true)
      // Deltas come before the message they build up.
      const firstDelta = socket.frames.findIndex((f) => f.type === 'delta')
      const message = socket.frames.findIndex((f) => f.type === 'event' && f.event.type === 'assistant/message')
      expect(firstDelta).toBeLessThan(message)
      // Usage as the conversation service meters it: empty on subscribe, then after the turn its cost and context.
      const usages = socket.frames.filter((f) => f.type === 'usage' && f.sessionId === id).map((f) => f.report)
      expect(usages[0]).toEqual({ usage: expect.any(Object), turns: [] })
      const logged = events.find((e) => e.type === 'assistant/message').data.usage
      const cached = logged.cacheReadTokens ?? 0
      const flash = (logged.inputTokens * 0.14 + cached * 0.0028 + logged.outputTokens * 0.28) / 1e6
      expect(usages.at(-1)).toMatchObject({
        turns: [{ turn: 1, model: 'deepseek-v4-flash', steps: 1, costUsd: expect.any(Number) }],
        context: { tokens: logged.inputTokens + cached + logged.outputTokens, window: 1_000_000 },
      })
      expect(usages.at(-1).costUsd).toBeCloseTo(flash, 12)

      const read = await app.api('GET', `/api/sessions/${id}`)
      expect(read.status).toBe(200)
      expect(read.json.session).toMatchObject({
        sessionId: id,
        cwd: app.work,
        running: false,
        model: 'deepseek-v4-flash',
        permissionPreset: 'workspace-write',
      })
      expect(read.json.events).toEqual(events)
    })

    it("sends each tool call with its tool's presentation (a plugin's own, else generic), which the log does not hold", async () => {
      mock.setFallback((req) =>
        req.body.messages.some((m: { role: string }) => m.role === 'tool')
          ? reply.text('Done.')
          : reply.toolCalls([
              { id: 'call_deploy', name: 'deploy', arguments: { target: 'site' } },
              { id: 'call_ghost', name: 'ghost', arguments: { path: 'a.txt' } },
            ]),
      )
      const id = await newSession({ permissionPreset: 'danger-full-access' })
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      await socket.next((f) => f.type === 'subscribed' && f.sessionId === id)
      expect((await app.api('POST', `/api/sessions/${id}/messages`, { text: 'deploy' })).status).toBe(202)
      await settled(socket, id)
      const live = socket.frames
        .filter((f) => f.type === 'event' && f.event.type === 'tool/call')
        .map((f) => f.event.data)
      const read = await app.api('GET', `/api/sessions/${id}`)
      const stored = read.json.events
        .filter((e: { type: string }) => e.type === 'tool/call')
        .map((e: { data: unknown }) => e.data)
      for (const calls of [live, stored]) {
        expect(calls.map((c: { presentation: unknown }) => c.presentation)).toEqual([
          {
            title: 'Deploy site',
            kind: 'execute',
            view: 'terminal',
            locations: [],
            command: 'deploy site',
            unfolded: true,
          },
          {
            title: 'ghost: a.txt',
            kind: 'other',
            view: 'generic',
            locations: [path.join(app.work, 'a.txt')],
            unfolded: false,
          },
        ])
      }
      // The log (flushed at the turn's end) holds the calls as the model made them, nothing more.
      const logged = (await readSessionLog(app.home, id)).events.filter((e) => e.type === 'tool/call')
      expect(logged.map((e) => Object.keys(e.data as object).sort())).toEqual([
        ['arguments', 'callId', 'name', 'step', 'turn'],
        ['arguments', 'callId', 'name', 'step', 'turn'],
      ])
    })

    it('POST /api/sessions/:id/rewind shows a dry run, then forks and restores the files a bash command changed', async () => {
      const work = path.join(app.work, 'rewind-web')
      await mkdir(work, { recursive: true })
      await writeFile(path.join(work, 'a.txt'), 'before\n')
      const id = await newSession({ cwd: work })
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      mock.enqueue(
        reply.toolCalls([{ name: 'bash', arguments: { description: 'Change', command: 'echo after > a.txt' } }]),
        reply.text('Changed.'),
      )
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'change a.txt' })
      await settled(socket, id, 1)
      expect(readFileSync(path.join(work, 'a.txt'), 'utf8')).toBe('after\n')

      const dry = await app.api('POST', `/api/sessions/${id}/rewind`, { to: '1', restoreFiles: true, dryRun: true })
      expect(dry.status).toBe(200)
      expect(dry.json).toMatchObject({ turn: 1, restored: false, changes: [{ path: 'a.txt', change: 'modified' }] })
      const bad = await app.api('POST', `/api/sessions/${id}/rewind`, { to: 'msg-nope' })
      expect(bad.json.error).toMatchObject({ code: 'bad-request' })
      expect(bad.json.error.message).toContain('no user message "msg-nope"')
      const done = await app.api('POST', `/api/sessions/${id}/rewind`, { to: '1', restoreFiles: true })
      expect(done.status).toBe(201)
      expect(done.json).toMatchObject({ restored: true, sessionId: expect.stringMatching(/^session-/) })
      expect(readFileSync(path.join(work, 'a.txt'), 'utf8')).toBe('before\n')
      const forked = await app.api('GET', `/api/sessions/${done.json.sessionId}`)
      expect(forked.json.session).toMatchObject({ forkedFrom: id, cwd: work })
    })

    it('lists, searches, patches, forks, cancels and deletes sessions', async () => {
      const id = await newSession({ model: 'deepseek-v4-pro', reasoningEffort: 'low', permissionPreset: 'read-only' })
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'first question' })
      await settled(socket, id, 1)
      expect(mock.requests.at(-1)?.body.model).toBe('deepseek-v4-pro')

      const listed = await app.api('GET', '/api/sessions')
      expect(listed.status).toBe(200)
      expect(listed.json.sessions.find((s: Frame) => s.sessionId === id)).toMatchObject({
        sessionId: id,
        cwd: app.work,
        running: false,
      })
      const filtered = await app.api('GET', `/api/sessions?cwd=${encodeURIComponent(path.join(app.home))}`)
      expect(filtered.json.sessions.some((s: Frame) => s.sessionId === id)).toBe(false)
      const limited = await app.api('GET', '/api/sessions?limit=1')
      expect(limited.json.sessions.length).toBeGreaterThanOrEqual(1)

      const detail = await app.api('GET', `/api/sessions/${id}`)
      expect(detail.json.session).toMatchObject({
        model: 'deepseek-v4-pro',
        reasoningEffort: 'low',
        permissionPreset: 'read-only',
      })

      expect(
        (
          await app.api('PATCH', `/api/sessions/${id}`, {
            model: 'deepseek-v4-flash',
            reasoningEffort: 'high',
            permissionPreset: 'workspace-write',
          })
        ).status,
      ).toBe(200)
      const patched = await app.api('GET', `/api/sessions/${id}`)
      expect(patched.json.session).toMatchObject({
        model: 'deepseek-v4-flash',
        reasoningEffort: 'high',
        permissionPreset: 'workspace-write',
      })

      expect(await app.api('PATCH', `/api/sessions/${id}`, { title: 'My title' })).toMatchObject({
        status: 200,
        json: {},
      })
      expect((await app.api('GET', `/api/sessions/${id}`)).json.session.title).toBe('My title')
      expect((await app.api('PATCH', `/api/sessions/${id}`, { title: '   ' })).json.error.message).toContain('title')
      const searched = await app.api('GET', `/api/sessions?query=${encodeURIComponent('first question')}`)
      expect(searched.json.sessions.map((s: Frame) => s.sessionId)).toContain(id)
      // The one search of ctx.conversations: a part of the folder finds the session too.
      const byFolder = await app.api('GET', `/api/sessions?query=${encodeURIComponent(path.basename(app.work))}`)
      expect(byFolder.json.sessions.map((s: Frame) => s.sessionId)).toContain(id)

      const compacted = await app.api('POST', `/api/sessions/${id}/compact`)
      expect(compacted.status).toBe(200)
      expect(compacted.json).toMatchObject({ compacted: expect.any(Boolean), replaced: expect.any(Number) })

      // A fork runs under the source's current preset, not the one logged at the fork point (read-only).
      expect((await app.api('PATCH', `/api/sessions/${id}`, { permissionPreset: 'danger-full-access' })).status).toBe(
        200,
      )
      const fork = await app.api('POST', `/api/sessions/${id}/fork`, { turn: 1 })
      expect(fork.status).toBe(201)
      const forked = await app.api('GET', `/api/sessions/${fork.json.sessionId}`)
      expect(forked.json.session).toMatchObject({
        forkedFrom: id,
        running: false,
        permissionPreset: 'danger-full-access',
      })
      expect(
        forked.json.events
          .filter((e: Frame) => e.type === 'user/message')
          .map((e: Frame) => e.data.message.content[0].text),
      ).toEqual(['first question'])
      expect((await app.api('POST', `/api/sessions/${id}/fork`, { turn: 7 })).json.error.code).toBe('bad-request')

      expect(await app.api('POST', `/api/sessions/${id}/cancel`)).toMatchObject({ status: 200, json: {} })

      expect(await app.api('DELETE', `/api/sessions/${fork.json.sessionId}`)).toMatchObject({ status: 200, json: {} })
      expect((await app.api('GET', `/api/sessions/${fork.json.sessionId}`)).json.error.code).toBe('unknown-session')
      expect(existsSync(path.join(app.home, 'sessions', `${fork.json.sessionId}.jsonl`))).toBe(false)
      expect(existsSync(path.join(app.home, 'sessions', `${fork.json.sessionId}.jsonl.zst`))).toBe(false)
    })

    it('cancels a running turn', async () => {
      const id = await newSession()
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      gate = new Promise(() => {})
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'list the files' })
      await socket.next((f) => f.type === 'event' && f.event.type === 'tool/result')
      expect((await app.api('GET', `/api/sessions/${id}`)).json.session.running).toBe(true)
      expect((await app.api('POST', `/api/sessions/${id}/cancel`)).status).toBe(200)
      const end = await settled(socket, id)
      expect(end.event.data).toMatchObject({ reason: 'aborted', cause: 'user' })
      await socket.next((f) => f.type === 'status' && f.sessionId === id && f.status === 'idle')
    })

    it('opens a stored session read-only and resumes it on send', async () => {
      const id = await newSession()
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'one' })
      await settled(socket, id)
      // A fork is stored and closed: the same as a session from an earlier run.
      const stored = (await app.api('POST', `/api/sessions/${id}/fork`)).json.sessionId
      const before = await app.api('GET', `/api/sessions/${stored}`)
      expect(before.json.session.running).toBe(false)
      const lastSeq = before.json.events.at(-1).seq
      const again = await app.api('GET', `/api/sessions/${stored}`)
      expect(again.json.events).toEqual(before.json.events) // reading did not append anything

      socket.send({ type: 'subscribe', sessionId: stored, afterSeq: lastSeq })
      expect(await socket.next((f) => f.type === 'subscribed' && f.sessionId === stored)).toMatchObject({ lastSeq })
      await app.api('POST', `/api/sessions/${stored}/messages`, { text: 'two' })
      await settled(socket, stored, 2)
      const live = socket.events(stored)
      expect(live[0].seq).toBe(lastSeq + 1)
      expect(live.map((e) => e.seq)).toEqual(live.map((_, i) => lastSeq + 1 + i))
      const all = (await app.api('GET', `/api/sessions/${stored}`)).json.events
      expect(all.slice(lastSeq + 1)).toEqual(live)
    })

    it('reads the recent part of a log in whole turns, with what the part left out adds up to, and the events before it', async () => {
      const id = await newSession()
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      for (const [turn, text] of ['one', 'two', 'three'].entries()) {
        await app.api('POST', `/api/sessions/${id}/messages`, { text })
        await settled(socket, id, turn + 1)
      }
      const whole = (await app.api('GET', `/api/sessions/${id}`)).json
      expect(whole.earlier).toBeUndefined()

      // Two events reach back into the last turn, so that turn comes whole, from its start.
      const recent = (await app.api('GET', `/api/sessions/${id}?tail=2`)).json
      const lastStart = whole.events.findLast((e: { type: string }) => e.type === 'turn/start')
      expect(recent.events[0]).toEqual(lastStart)
      expect(recent.events).toEqual(whole.events.filter((e: { seq: number }) => e.seq >= lastStart.seq))
      expect(recent.session).toEqual(whole.session)

      const left = whole.events.filter((e: { seq: number }) => e.seq < lastStart.seq)
      expect(recent.earlier.before).toBe(lastStart.seq)
      const header = left.findLast((e: { type: string }) => e.type === 'request/header')
      expect(recent.earlier.state).toContainEqual(header)
      const replies = left.filter((e: { type: string }) => e.type === 'assistant/message')
      expect(replies).toHaveLength(2)
      const sum = (key: string) =>
        replies.reduce((n: number, e: { data: { usage: Record<string, number> } }) => n + (e.data.usage[key] ?? 0), 0)
      expect(recent.earlier.usage).toEqual([
        {
          model: replies[0].data.message.source.model,
          usage: {
            inputTokens: sum('inputTokens'),
            outputTokens: sum('outputTokens'),
            cacheReadTokens: sum('cacheReadTokens'),
            reasoningTokens: sum('reasoningTokens'),
          },
        },
      ])
      expect(sum('outputTokens')).toBeGreaterThan(0)

      const before = (await app.api('GET', `/api/sessions/${id}/events?before=${recent.earlier.before}`)).json
      expect([...before.events, ...recent.events]).toEqual(whole.events)
      // A tail longer than the log is the whole log.
      expect((await app.api('GET', `/api/sessions/${id}?tail=100000`)).json).toEqual(whole)

      expect(await call(app.port, 'GET', `/api/sessions/${id}?tail=0`)).toMatchObject({
        status: 400,
        json: { error: { code: 'bad-request', message: expect.stringMatching(/^query: tail: /) } },
      })
      expect((await call(app.port, 'GET', `/api/sessions/${id}?tail=many`)).json.error.message).toMatch(
        /^query: tail: /,
      )
      expect((await call(app.port, 'GET', `/api/sessions/${id}/events`)).json.error.message).toMatch(/^query: before: /)
      expect((await call(app.port, 'GET', `/api/sessions/${id}/events?before=-1`)).json.error.message).toMatch(
        /^query: before: /,
      )
      expect(await call(app.port, 'GET', '/api/sessions/session-nope/events?before=3')).toMatchObject({
        status: 404,
        json: { error: { code: 'unknown-session' } },
      })
    })

    it('queues two senders to one session in order, one turn each, never interleaved', async () => {
      const id = await newSession()
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'setup' })
      await settled(socket, id, 1)
      // Stored and not running: both sends have to resume it first.
      const stored = (await app.api('POST', `/api/sessions/${id}/fork`)).json.sessionId
      socket.send({ type: 'subscribe', sessionId: stored })
      await socket.next((f) => f.type === 'subscribed' && f.sessionId === stored)

      const [a, b] = await Promise.all([
        app.api('POST', `/api/sessions/${stored}/messages`, { text: 'slow from tab A' }),
        app.api('POST', `/api/sessions/${stored}/messages`, { text: 'slow from tab B' }),
      ])
      expect([a.status, b.status]).toEqual([202, 202])
      expect([a.json.queued, b.json.queued].sort()).toEqual([false, true])
      await settled(socket, stored, 3)

      const events = (await app.api('GET', `/api/sessions/${stored}`)).json.events as Frame[]
      const turns = [2, 3].map((turn) => {
        const start = events.findIndex((e) => e.type === 'turn/start' && e.data.turn === turn)
        const end = events.findIndex((e) => e.type === 'turn/end' && e.data.turn === turn)
        const inside = events.slice(start, end + 1)
        return {
          asked: inside.filter((e) => e.type === 'user/message').map((e) => e.data.message.content[0].text),
          answered: inside.filter((e) => e.type === 'assistant/message').map((e) => e.data.message.content.at(-1).text),
        }
      })
      const first = a.json.queued ? 'B' : 'A'
      const second = first === 'A' ? 'B' : 'A'
      expect(turns).toEqual([
        {
          asked: [`slow from tab ${first}`],
          answered: [`slow answer to slow from tab ${first}: one two three four five six`],
        },
        {
          asked: [`slow from tab ${second}`],
          answered: [`slow answer to slow from tab ${second}: one two three four five six`],
        },
      ])
    })

    it('reconnects with afterSeq mid-turn: the replay and the live events join without loss or duplicates', async () => {
      const id = await newSession()
      const first = await open()
      first.send({ type: 'subscribe', sessionId: id })
      await first.next((f) => f.type === 'subscribed')
      let open_ = () => {}
      gate = new Promise((resolve) => (open_ = resolve))
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'list the files please' })
      await first.next((f) => f.type === 'event' && f.event.type === 'tool/call')
      await first.close()
      const seen = first.events(id)
      const afterSeq = seen.at(-1).seq

      const second = await open()
      second.send({ type: 'subscribe', sessionId: id, afterSeq })
      const subscribed = await second.next((f) => f.type === 'subscribed')
      expect(subscribed.running).toBe(true)
      open_()
      await settled(second, id)
      const rest = second.events(id)
      const seqs = [...seen, ...rest].map((e) => e.seq)
      expect(seqs).toEqual(seqs.map((_, i) => i))
      const stored = (await app.api('GET', `/api/sessions/${id}`)).json.events
      expect([...seen, ...rest]).toEqual(stored)
      // The model's next reply is held by the gate until the second socket subscribed, so it can only arrive there.
      expect(rest.some((e) => e.type === 'assistant/message')).toBe(true)
    })

    it('round-trips approvals over the socket and POST, re-sending pending ones on subscribe', async () => {
      const id = await newSession({ permissionPreset: 'read-only' })
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'write note.txt hello' })
      const asked = await socket.next((f) => f.type === 'approval')
      expect(asked).toMatchObject({ sessionId: id, preset: 'read-only', toolCall: { name: 'write' } })
      expect(JSON.parse(asked.toolCall.arguments)).toEqual({ file_path: 'note.txt', content: 'hello' })
      expect(asked.reason).toContain('read-only')

      const late = await open()
      late.send({ type: 'subscribe', sessionId: id })
      expect(await late.next((f) => f.type === 'approval')).toEqual(asked)

      expect(await app.api('POST', `/api/approvals/${asked.requestId}`, { decision: 'allow-once' })).toMatchObject({
        status: 200,
        json: {},
      })
      await socket.next((f) => f.type === 'approval-resolved' && f.requestId === asked.requestId)
      await late.next((f) => f.type === 'approval-resolved' && f.requestId === asked.requestId)
      const again = await app.api('POST', `/api/approvals/${asked.requestId}`, { decision: 'reject' })
      expect(again).toMatchObject({ status: 404, json: { error: { code: 'not-found' } } })
      await settled(socket, id, 1)
      expect(readFileSync(path.join(app.work, 'note.txt'), 'utf8')).toBe('hello')

      const from = socket.frames.length
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'write other.txt nope' })
      const second = await socket.next((f) => f.type === 'approval', from)
      await app.api('POST', `/api/approvals/${second.requestId}`, { decision: 'reject', message: 'not in this folder' })
      await settled(socket, id, 2, from)
      const result = socket.events(id).find((e) => e.type === 'tool/result' && e.data.turn === 2)
      expect(result.data.error.code).toBe('DENIED')
      expect(JSON.stringify(result.data.message)).toContain('not in this folder')
      expect(existsSync(path.join(app.work, 'other.txt'))).toBe(false)
      expect((await app.api('POST', `/api/approvals/${second.requestId}`, { decision: 'maybe' })).json.error.code).toBe(
        'bad-request',
      )
    })

    it('round-trips user questions over the socket and POST', async () => {
      const id = await newSession()
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'ask me' })
      const asked = await socket.next((f) => f.type === 'question')
      expect(asked).toMatchObject({
        sessionId: id,
        questions: [
          {
            id: 'color',
            question: 'Which color?',
            header: 'Color',
            options: [{ label: 'Red' }, { label: 'Blue', description: 'Calm.' }],
          },
        ],
      })
      expect(typeof asked.callId).toBe('string')
      const bad = await app.api('POST', `/api/questions/${asked.requestId}`, { answers: 'Blue' })
      expect(bad).toMatchObject({ status: 400, json: { error: { code: 'bad-request' } } })
      const answered = await app.api('POST', `/api/questions/${asked.requestId}`, {
        answers: [{ question: 'Which color?', selected: ['Blue'], text: 'navy' }],
      })
      expect(answered).toMatchObject({ status: 200, json: {} })
      await socket.next((f) => f.type === 'question-resolved' && f.requestId === asked.requestId)
      await settled(socket, id)
      const result = socket.events(id).find((e) => e.type === 'tool/result')
      expect(JSON.stringify(result.data.message)).toContain('Selected: Blue')
      expect(
        (
          await app.api('POST', `/api/questions/${asked.requestId}`, {
            answers: [{ question: 'Which color?', selected: ['Red'] }],
          })
        ).status,
      ).toBe(404)
    })

    it('lists workspace files for @ mentions, honouring .gitignore', async () => {
      await mkdir(path.join(app.work, 'src'), { recursive: true })
      await mkdir(path.join(app.work, 'build'), { recursive: true })
      await writeFile(path.join(app.work, '.gitignore'), 'build/\n')
      await writeFile(path.join(app.work, 'src', 'main.ts'), '')
      await writeFile(path.join(app.work, 'src', 'other.ts'), '')
      await writeFile(path.join(app.work, 'build', 'main.js'), '')
      const all = await app.api('GET', `/api/files?cwd=${encodeURIComponent(app.work)}&limit=1000`)
      expect(all.status).toBe(200)
      expect(all.json.files).toEqual(expect.arrayContaining(['src/main.ts', 'src/other.ts', '.gitignore']))
      expect(all.json.files).not.toContain('build/main.js')
      const found = await app.api('GET', `/api/files?query=main&limit=5`)
      expect(found.json.files[0]).toBe('src/main.ts')

      const dirs = await app.api('GET', `/api/dirs?path=${encodeURIComponent(app.work)}`)
      expect(dirs.json).toMatchObject({ path: app.work, parent: path.dirname(app.work) })
      expect(dirs.json.dirs).toEqual(expect.arrayContaining(['build', 'src']))
      expect((await app.api('GET', '/api/dirs?path=relative/path')).json.error.message).toContain(
        'path must be an absolute path',
      )
      expect((await app.api('GET', '/api/workspaces')).json.workspaces).toContain(app.work)
    })

    it('reads and writes settings: key 0600 in the credentials file, model in settings.yaml', async () => {
      const before = await app.api('GET', '/api/settings')
      expect(before.json).toMatchObject({
        provider: 'deepseek',
        hasKey: true,
        keySource: 'env',
        model: 'deepseek-v4-flash',
        permissionPreset: 'workspace-write',
        theme: 'system',
      })
      const put = await app.api('PUT', '/api/settings', {
        apiKey: 'sk-stored-key',
        model: 'deepseek-v4-pro',
        reasoningEffort: 'max',
        theme: 'dark',
        permissionPreset: 'read-only',
      })
      expect(put.status).toBe(200)
      expect(put.json).toMatchObject({
        model: 'deepseek-v4-pro',
        reasoningEffort: 'max',
        theme: 'dark',
        permissionPreset: 'read-only',
      })
      expect(JSON.stringify(put.json)).not.toContain('sk-stored-key')
      const credentials = path.join(app.home, '.credentials.yaml')
      expect(statSync(credentials).mode & 0o777).toBe(0o600)
      expect(readFileSync(credentials, 'utf8')).toContain('DEEPSEEK_API_KEY: sk-stored-key')
      const settings = readFileSync(path.join(app.home, 'settings.yaml'), 'utf8')
      expect(settings).toMatch(/agent:\n {2}model: deepseek-v4-pro\n {2}reasoningEffort: max/)
      expect(settings).toMatch(/web:\n {2}permissionPreset: read-only\n {2}theme: dark/)
      // New agents use it, and new web sessions get the preset.
      expect((await app.api('GET', '/api/info')).json.defaultModel).toBe('deepseek-v4-pro')
      const id = await newSession()
      expect((await app.api('GET', `/api/sessions/${id}`)).json.session.permissionPreset).toBe('read-only')

      const bad = await app.api('PUT', '/api/settings', { theme: 'neon', color: 1 })
      expect(bad.status).toBe(400)
      expect(bad.json.error.code).toBe('bad-request')
      expect(bad.json.error.message).toContain('theme')
      await app.api('PUT', '/api/settings', {
        model: 'deepseek-v4-flash',
        reasoningEffort: 'high',
        theme: 'system',
        permissionPreset: 'workspace-write',
      })
    })

    it('sets the network of sandboxed commands per session and as the default of new sessions', async () => {
      const plain = await newSession()
      expect((await app.api('GET', `/api/sessions/${plain}`)).json.session.network).toBe('proxy')
      const off = await newSession({ network: 'off' })
      expect((await app.api('GET', `/api/sessions/${off}`)).json.session.network).toBe('off')
      expect((await app.api('PATCH', `/api/sessions/${off}`, { network: 'on' })).status).toBe(200)
      const patched = await app.api('GET', `/api/sessions/${off}`)
      expect(patched.json.session.network).toBe('on')
      expect(
        patched.json.events.filter((e: Frame) => e.type === 'permission/network').map((e: Frame) => e.data),
      ).toEqual([{ network: 'off' }, { network: 'on' }])

      const put = await app.api('PUT', '/api/settings', { network: 'off' })
      expect(put.json).toMatchObject({ network: 'off', networks: ['off', 'proxy', 'on'] })
      expect(readFileSync(path.join(app.home, 'settings.yaml'), 'utf8')).toMatch(/web:\n(.*\n)* {2}network: off/)
      const defaulted = await newSession()
      expect((await app.api('GET', `/api/sessions/${defaulted}`)).json.session.network).toBe('off')

      for (const [method, route, body] of [
        ['POST', '/api/sessions', { network: 'everything' }],
        ['PATCH', `/api/sessions/${plain}`, { network: true }],
        ['PUT', '/api/settings', { network: 'wide' }],
      ] as const) {
        const bad = await app.api(method, route, body)
        expect(bad.status, route).toBe(400)
        expect(bad.json.error.message, route).toContain('network')
      }
      await app.api('PUT', '/api/settings', { network: 'proxy' })
    })

    it('tests the connection: ok, and the provider code for a wrong key', async () => {
      expect((await app.api('POST', '/api/settings/test')).json).toEqual({ ok: true, model: 'deepseek-v4-flash' })
      expect(mock.requests.at(-1)?.headers.authorization).toBe('Bearer sk-test-key')
      mock.setFallback(reply.error(401))
      const failed = await app.api('POST', '/api/settings/test')
      expect(failed.status).toBe(200)
      expect(failed.json).toMatchObject({ ok: false, error: { code: 'AUTH', status: 401 } })
      expect(failed.json.error.message).toContain('DEEPSEEK_API_KEY')
    })

    it('shows a wrong key on a session as a turn error with the provider code', async () => {
      mock.setFallback(reply.error(401))
      const id = await newSession()
      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: id })
      await app.api('POST', `/api/sessions/${id}/messages`, { text: 'hi' })
      const end = await settled(socket, id)
      expect(end.event.data).toMatchObject({ reason: 'error', error: { code: 'AUTH', status: 401 } })
    })
  })

  describe('bad input', () => {
    it('refuses a wrong Host, a DNS-rebinding Host and a wrong Origin with 403', async () => {
      const host = await call(app.port, 'GET', '/api/info', { headers: { host: 'example.org' } })
      expect(host).toMatchObject({ status: 403, json: { error: { code: 'bad-host' } } })
      const rebinding = await call(app.port, 'GET', '/api/sessions', { headers: { host: `evil.com:${app.port}` } })
      expect(rebinding).toMatchObject({ status: 403, json: { error: { code: 'bad-host' } } })
      expect(rebinding.json.error.message).toContain(`evil.com:${app.port}`)
      const origin = await call(app.port, 'POST', '/api/sessions', { body: {}, headers: { origin: 'http://evil.com' } })
      expect(origin).toMatchObject({ status: 403, json: { error: { code: 'bad-origin' } } })
      expect(
        (await call(app.port, 'GET', '/api/info', { headers: { origin: `http://127.0.0.1:${app.port}` } })).status,
      ).toBe(200)
      expect((await call(app.port, 'GET', '/api/info', { headers: { host: `localhost:${app.port}` } })).status).toBe(
        200,
      )
      expect((await call(app.port, 'GET', '/api/info', { headers: { host: `devbox.lan:${app.port}` } })).status).toBe(
        200,
      )
    })

    it('refuses sockets with a wrong Host or Origin before any frame', async () => {
      const url = `ws://127.0.0.1:${app.port}/api/ws`
      expect(await Socket.refused(url, { headers: { host: `evil.com:${app.port}` } })).toMatchObject({
        status: 403,
        body: { error: { code: 'bad-host' } },
      })
      expect(await Socket.refused(url, { origin: 'http://evil.com' })).toMatchObject({
        status: 403,
        body: { error: { code: 'bad-origin' } },
      })
      expect((await call(app.port, 'GET', '/api/ws')).json.error.code).toBe('upgrade-required')
    })

    it('answers malformed JSON, bad fields, unknown routes and methods, and oversized bodies', async () => {
      const malformed = await call(app.port, 'POST', '/api/sessions', { raw: '{"cwd": ' })
      expect(malformed).toMatchObject({ status: 400, json: { error: { code: 'bad-json' } } })
      const field = await call(app.port, 'POST', '/api/sessions', { body: { cwd: 'not/absolute' } })
      expect(field).toMatchObject({
        status: 400,
        json: { error: { code: 'bad-request', message: 'cwd must be an absolute path, got "not/absolute"' } },
      })
      const empty = await call(app.port, 'POST', `/api/sessions/${await newSession()}/messages`, {
        body: { text: '  ' },
      })
      expect(empty.json.error).toMatchObject({ code: 'bad-request' })
      expect(empty.json.error.message).toContain('text')
      expect(await call(app.port, 'GET', '/api/nothing')).toMatchObject({
        status: 404,
        json: { error: { code: 'not-found' } },
      })
      const method = await call(app.port, 'DELETE', '/api/info')
      expect(method).toMatchObject({ status: 405, json: { error: { code: 'method-not-allowed' } } })
      expect(method.headers.allow).toBe('GET')
      expect((await call(app.port, 'PUT', '/api/sessions')).headers.allow).toBe('GET, POST')
      expect(await call(app.port, 'GET', '/api/sessions/session-nope')).toMatchObject({
        status: 404,
        json: { error: { code: 'unknown-session' } },
      })
      expect(
        (await call(app.port, 'POST', '/api/sessions/session-nope/messages', { body: { text: 'hi' } })).json.error.code,
      ).toBe('unknown-session')
      const text = await call(app.port, 'POST', '/api/sessions', {
        raw: '{}',
        headers: { 'content-type': 'text/plain' },
      })
      expect(text).toMatchObject({ status: 415, json: { error: { code: 'unsupported-media-type' } } })
      const huge = await call(app.port, 'POST', '/api/sessions', {
        raw: JSON.stringify({ cwd: 'x'.repeat(9 * 1024 * 1024) }),
      })
      expect(huge).toMatchObject({ status: 413, json: { error: { code: 'too-large' } } })
    })

    it('answers a bad session id, cursor or parameter with 400 naming it, on every route that reads one', async () => {
      const id = await newSession()
      const bad = async (method: string, urlPath: string, parameter: string, body?: unknown) => {
        const reply = await call(app.port, method, urlPath, body === undefined ? {} : { body })
        expect({ route: `${method} ${urlPath}`, status: reply.status, code: reply.json?.error?.code }).toEqual({
          route: `${method} ${urlPath}`,
          status: 400,
          code: 'bad-request',
        })
        expect(reply.json.error.message).toContain(parameter)
        return reply.json.error.message as string
      }
      const traversal = '..%2f..%2fetc%2fpasswd'
      expect(await bad('GET', `/api/sessions/${traversal}`, 'id')).toBe(
        'id: "../../etc/passwd" must be a session id (1 to 200 letters, digits and . _ : @ + = -, starting with a letter or digit)',
      )
      await bad('GET', `/api/sessions/${traversal}/events?before=3`, 'id')
      await bad('POST', `/api/sessions/${traversal}/messages`, 'id', { text: 'hi' })
      await bad('POST', `/api/sessions/${traversal}/cancel`, 'id')
      await bad('POST', `/api/sessions/${traversal}/compact`, 'id')
      await bad('POST', `/api/sessions/${traversal}/fork`, 'id')
      await bad('PATCH', `/api/sessions/${traversal}`, 'id', { title: 'x' })
      await bad('DELETE', `/api/sessions/${traversal}`, 'id')
      expect(await bad('GET', '/api/sessions/a..b', 'id')).toContain('without ".."')
      await bad('GET', '/api/sessions/%20spaced', 'id')

      expect(await bad('GET', '/api/sessions?cursor=bogus', 'cursor')).toBe(
        'cursor: "bogus" is not a cursor this server returned; pass the nextCursor of the previous page',
      )
      await bad('GET', '/api/sessions?limit=lots', 'limit')
      await bad('GET', '/api/sessions?limit=0', 'limit')
      await bad('GET', '/api/sessions?cwd=relative/dir', 'cwd')
      await bad('GET', `/api/sessions/${id}?tail=0`, 'tail')
      await bad('GET', `/api/sessions/${id}/events?before=soon`, 'before')
      await bad('POST', '/api/sessions', 'model', { model: 'gpt-17' })
      await bad('POST', '/api/sessions', 'permissionPreset', { permissionPreset: 'root' })
      await bad('POST', '/api/sessions', 'reasoningEffort', { reasoningEffort: 'extreme' })
      await bad('POST', '/api/sessions', 'cwd', { cwd: path.join(app.work, 'missing') })
      await bad('POST', '/api/sessions', 'color', { color: 'red' })
      await bad('POST', `/api/sessions/${id}/messages`, 'images.0.data', {
        text: 'x',
        images: [{ mediaType: 'image/png', data: '%%%%' }],
      })
      await bad('POST', `/api/sessions/${id}/fork`, 'turn', { turn: 0 })
      await bad('PATCH', `/api/sessions/${id}`, 'model', { model: 'gpt-17' })
      await bad('PATCH', `/api/sessions/${id}`, 'title', { title: '   ' })
      await bad('PUT', '/api/settings', 'model', { model: 'gpt-17' })
      await bad('PUT', '/api/settings', 'baseUrl', { baseUrl: 'ftp://example.com' })
      await bad('PUT', '/api/settings', 'theme', { theme: 'neon' })
      await bad('GET', '/api/files?limit=0', 'limit')
      await bad('GET', '/api/files?cwd=relative', 'cwd')
      await bad('GET', '/api/dirs?hidden=maybe', 'hidden')
      await bad('GET', `/api/dirs?path=${encodeURIComponent(path.join(app.work, 'missing'))}`, 'path')
      await bad('POST', '/api/approvals/some-request', 'decision', { decision: 'perhaps' })
      await bad('POST', '/api/questions/some-request', 'answers', { answers: [] })

      const socket = await open()
      socket.send({ type: 'subscribe', sessionId: '../../etc/passwd' })
      const frame = await socket.next((f) => f.type === 'error')
      expect(frame.error.code).toBe('bad-request')
      expect(frame.error.message).toContain('sessionId: must be a session id')

      // None of that was a fault of the server: nothing was logged as one.
      expect(app.proc.stderr).not.toMatch(/failed: |internal/)
      // And the session named right still answers.
      expect((await call(app.port, 'GET', `/api/sessions/${id}`)).status).toBe(200)
    })

    it('answers bad socket frames with an error frame and keeps the socket', async () => {
      const socket = await open()
      socket.ws.send('{nope')
      expect((await socket.next((f) => f.type === 'error')).error.code).toBe('bad-json')
      socket.send({ type: 'dance' })
      expect((await socket.next((f) => f.type === 'error' && f.error.code === 'bad-request')).error.message).toContain(
        'subscribe, unsubscribe, ping',
      )
      socket.send({ type: 'subscribe', sessionId: 'session-missing' })
      expect(await socket.next((f) => f.type === 'error' && f.sessionId === 'session-missing')).toMatchObject({
        error: { code: 'unknown-session' },
      })
      socket.send({ type: 'ping' })
      await socket.next((f) => f.type === 'pong')
    })

    it('explains a missing app build on every page, and warned at startup', async () => {
      for (const page of ['/', '/sessions/x']) {
        const res = await call(app.port, 'GET', page)
        expect(res.status).toBe(503)
        expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
        expect(res.text).toContain('pnpm --filter @dsh/web-ui build')
      }
      expect(app.proc.stderr).toContain('dsh web: warning: the browser app is not built')
      expect(app.proc.stderr).toContain('pnpm --filter @dsh/web-ui build')
    })
  })
})

// --- separate processes -----------------------------------------------------

describe('dsh web processes', () => {
  let mock: MockLlm
  let root: string
  let cleanup: () => Promise<void>
  let running: DshProcess | undefined

  beforeAll(async () => {
    mock = await startMockLlm({ fallback: model })
  })
  afterAll(() => mock.close())
  beforeEach(async () => {
    ;({ dir: root, dispose: cleanup } = await tempDir())
  })
  afterEach(async () => {
    await running?.kill('SIGTERM')
    running = undefined
    await cleanup()
  })

  it('needs the printed token on every API call and socket when bound to a non-loopback address', async () => {
    const app = await startWeb(mock, root, ['--host', '0.0.0.0'])
    running = app.proc
    expect(app.token).toMatch(/^[\w-]{20,}$/)
    expect(app.proc.stdout).toBe(`dsh web: http://127.0.0.1:${app.port}/#token=${app.token}\n`)
    expect(await call(app.port, 'GET', '/api/info')).toMatchObject({
      status: 401,
      json: { error: { code: 'unauthorized' } },
    })
    expect((await call(app.port, 'GET', '/api/info', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401)
    const info = await app.api('GET', '/api/info')
    expect(info).toMatchObject({ status: 200, json: { auth: true } })
    // The page itself loads without the token (it reads it from the URL fragment).
    expect((await call(app.port, 'GET', '/')).status).not.toBe(401)
    const url = `ws://127.0.0.1:${app.port}/api/ws`
    expect(await Socket.refused(url)).toMatchObject({ status: 401, body: { error: { code: 'unauthorized' } } })
    const socket = await app.socket()
    socket.send({ type: 'ping' })
    await socket.next((f) => f.type === 'pong')
    await socket.close()
  })

  it('keeps serving through a reload of unrelated rows, and the API comes back after a reload of its own services', async () => {
    const app = await startWeb(mock, root, [], { DSH_LOG_LEVEL: 'info' })
    running = app.proc
    const socket = await app.socket()
    const homePatch = path.join(app.home, 'cordis.patch.yml')

    let from = app.proc.mark()
    await writeFile(homePatch, '- id: tool-terminal\n  disabled: true\n')
    await app.proc.waitFor(/dsh: reloaded /, { from })
    socket.send({ type: 'ping' })
    await socket.next((f) => f.type === 'pong')
    expect((await app.api('GET', '/api/info')).status).toBe(200)

    from = app.proc.mark()
    await writeFile(
      homePatch,
      "- id: tool-terminal\n  disabled: true\n- id: agent\n  config:\n    provider: deepseek\n    model: reloaded-model\n    settingsFile: !!js dshHomePath('settings.yaml')\n",
    )
    await app.proc.waitFor(/dsh: reloaded /, { from })
    // The API restarted with the agent service: its sockets closed, the port stayed.
    await socket.closed
    expect((await app.api('GET', '/api/info')).json.defaultModel).toBe('reloaded-model')
    // Approvals reach the restarted API: its old approver went away with it.
    const again = await app.socket()
    const id = (await app.api('POST', '/api/sessions', { permissionPreset: 'read-only' })).json.sessionId
    again.send({ type: 'subscribe', sessionId: id })
    await again.next((f) => f.type === 'subscribed')
    await app.api('POST', `/api/sessions/${id}/messages`, { text: 'write after-reload.txt yes' })
    const asked = await again.next((f) => f.type === 'approval')
    await app.api('POST', `/api/approvals/${asked.requestId}`, { decision: 'allow-once' })
    await settled(again, id)
    expect(readFileSync(path.join(app.work, 'after-reload.txt'), 'utf8')).toBe('yes')
    expect(app.proc.stderr).not.toContain('approver is already set')
    await again.close()
  })

  it('unloads an idle session no tab watches, sealing its log, and resumes it on the next message', async () => {
    const home = path.join(root, 'home')
    await mkdir(home, { recursive: true })
    await writeFile(
      path.join(home, 'cordis.patch.yml'),
      "- id: web-api\n  config:\n    home: !!js dshHomePath()\n    settingsFile: !!js dshHomePath('settings.yaml')\n    idleUnloadMs: 200\n",
    )
    const app = await startWeb(mock, root)
    running = app.proc
    const id = (await app.api('POST', '/api/sessions', {})).json.sessionId
    const sealed = path.join(home, 'sessions', `${id}.jsonl.zst`)
    const socket = await app.socket()
    socket.send({ type: 'subscribe', sessionId: id })
    await socket.next((f) => f.type === 'subscribed')
    await app.api('POST', `/api/sessions/${id}/messages`, { text: 'hello there' })
    await settled(socket, id)
    // Watched while idle: kept. The tab goes away: unloaded, the session closed and its log sealed.
    expect(existsSync(sealed)).toBe(false)
    await socket.close()
    await vi.waitFor(() => expect(existsSync(sealed)).toBe(true), { timeout: 20_000, interval: 50 })

    // The next message resumes it from the log and the conversation goes on.
    const again = await app.socket()
    again.send({ type: 'subscribe', sessionId: id })
    await again.next((f) => f.type === 'subscribed')
    await app.api('POST', `/api/sessions/${id}/messages`, { text: 'still there?' })
    const end = await settled(again, id, 2)
    expect(end.event.data.reason).toBe('completed')
    const texts = mock.requests
      .at(-1)
      ?.body.messages.map((m: { content: unknown }) => textOf(m as { content?: unknown }))
    expect(texts).toEqual(expect.arrayContaining(['hello there', 'still there?']))
    await again.close()
  })

  it('closes its sockets and exits cleanly on SIGTERM while a turn runs', async () => {
    const app = await startWeb(mock, root)
    const created = await app.api('POST', '/api/sessions', {})
    const id = created.json.sessionId
    const socket = await app.socket()
    socket.send({ type: 'subscribe', sessionId: id })
    gate = new Promise(() => {})
    await app.api('POST', `/api/sessions/${id}/messages`, { text: 'list everything' })
    await socket.next((f) => f.type === 'event' && f.event.type === 'tool/result')
    const result = await app.proc.kill('SIGTERM')
    gate = undefined
    await socket.closed
    expect(result.code).toBe(0)
    expect(result.stderr).not.toMatch(/fatal|Error/)
    await expect(call(app.port, 'GET', '/api/info')).rejects.toThrow()
  })

  it('shares sessions with other dsh processes one writer at a time: 409 busy for a session one has open', async () => {
    // Unwatched idle sessions unload at once, so the last part can hand one over (a patch for this web run only).
    const quickUnload = path.join(root, 'quick-unload.yml')
    await writeFile(
      quickUnload,
      "- id: web-api\n  config:\n    home: !!js dshHomePath()\n    settingsFile: !!js dshHomePath('settings.yaml')\n    idleUnloadMs: 200\n",
    )
    const app = await startWeb(mock, root, [], {}, ['--patch', quickUnload])
    running = app.proc
    const env = { DEEPSEEK_BASE_URL: mock.url, DEEPSEEK_API_KEY: 'sk-test-key' }
    // The server has this one open: a headless resume is refused, naming the server's process.
    const held = (await app.api('POST', '/api/sessions', {})).json.sessionId
    const socket = await app.socket()
    socket.send({ type: 'subscribe', sessionId: held })
    await socket.next((f) => f.type === 'subscribed')
    await app.api('POST', `/api/sessions/${held}/messages`, { text: 'hello there' })
    await settled(socket, held)
    const refused = await runDsh(['--profile', 'headless', '--resume', held, 'me too'], {
      home: app.home,
      cwd: app.work,
      env,
    })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`dsh: session ${held} is open in another dsh (process ${app.proc.child.pid} on `)

    // A headless run has this one open mid-turn: the server answers 409 to a message and to a delete.
    let open: () => void = () => {}
    gate = new Promise((resolve) => (open = resolve))
    const headless = startDsh(['--profile', 'headless', '--json', 'list the files'], {
      home: app.home,
      cwd: app.work,
      env,
    })
    await headless.waitFor(/"type":"tool\/result"/, { stream: 'stdout' })
    const id = JSON.parse(headless.stdout.split('\n')[0] as string).sessionId as string
    await vi.waitFor(() => expect(existsSync(path.join(app.home, 'sessions', `${id}.lock`))).toBe(true), {
      timeout: 10_000,
      interval: 20,
    })
    const busy = await app.api('POST', `/api/sessions/${id}/messages`, { text: 'me too' })
    expect({ status: busy.status, json: busy.json }).toMatchObject({ status: 409 })
    expect(busy.json.error.code).toBe('busy')
    expect(busy.json.error.message).toContain(`session ${id} is open in another dsh (process ${headless.child.pid} on `)
    const deleted = await app.api('DELETE', `/api/sessions/${id}`)
    expect({ status: deleted.status, json: deleted.json }).toMatchObject({
      status: 409,
      json: { error: { code: 'busy' } },
    })
    open()
    gate = undefined
    expect((await headless.exited).code).toBe(0)
    // It has exited: the server may take the session now.
    socket.send({ type: 'subscribe', sessionId: id })
    await socket.next((f) => f.type === 'subscribed' && f.sessionId === id)
    expect((await app.api('POST', `/api/sessions/${id}/messages`, { text: 'now me' })).status).toBe(202)
    expect((await settled(socket, id, 2)).event.data.reason).toBe('completed')

    // No tab watches the first one any more: the server unloads it, a terminal run takes it, and the list says so.
    socket.send({ type: 'unsubscribe', sessionId: held })
    await vi.waitFor(() => expect(existsSync(path.join(app.home, 'sessions', `${held}.jsonl.zst`))).toBe(true), {
      timeout: 20_000,
      interval: 50,
    })
    gate = new Promise((resolve) => (open = resolve))
    const terminal = startDsh(['--profile', 'headless', '--resume', held, 'list the files'], {
      home: app.home,
      cwd: app.work,
      env,
    })
    const lease = path.join(app.home, 'sessions', `${held}.lock`)
    await vi.waitFor(
      () => expect(existsSync(lease) && JSON.parse(readFileSync(lease, 'utf8')).pid).toBe(terminal.child.pid),
      { timeout: 10_000, interval: 20 },
    )
    const listed = (await app.api('GET', '/api/sessions')).json.sessions
    expect(listed.find((s: { sessionId: string }) => s.sessionId === held)?.openIn).toMatchObject({
      pid: terminal.child.pid,
    })
    expect(listed.find((s: { sessionId: string }) => s.sessionId === id)?.openIn).toBeUndefined()
    open()
    gate = undefined
    expect((await terminal.exited).code).toBe(0)
    await socket.close()
  })
})
