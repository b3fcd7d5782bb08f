// The TypeScript client against the real built `dsh` bin, with the scripted
// model server: the flows of apps/cli/tests/sdk.test.ts through typed methods.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type MockLlm, reply, startMockLlm } from '../../../test-support/llm-mock/src/index.ts'
import { assertBuilt, dshBin, tempDir } from '../../../test-support/testkit/src/index.ts'
import {
  ConnectionClosedError,
  DshClient,
  RpcError,
  RunError,
  type SessionUpdate,
  type SpawnOptions,
} from '../src/index.ts'

let mock: MockLlm
let home: string
let work: string
let cleanup: () => Promise<void>
const clients: DshClient[] = []

beforeAll(async () => {
  assertBuilt()
  mock = await startMockLlm()
})
afterAll(() => mock.close())
beforeEach(async () => {
  mock.reset()
  const tmp = await tempDir('dsh-sdk-client-')
  cleanup = tmp.dispose
  home = path.join(tmp.dir, 'home')
  work = path.join(tmp.dir, 'work')
  await mkdir(work, { recursive: true })
})
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()))
  await cleanup()
})

/** The environment of a dsh child: no developer DSH_ or DEEPSEEK_ settings, a temp home, the mock. */
function env(): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env))
    if (!key.startsWith('DSH_') && !key.startsWith('DEEPSEEK_')) out[key] = value
  return { ...out, DSH_HOME: home, DEEPSEEK_BASE_URL: mock.url, DEEPSEEK_API_KEY: 'sk-client-test' }
}

/** Sessions go in the temp workspace: `newSession()` without a cwd would use this process's folder (the repository). */
async function connect(options: SpawnOptions = {}): Promise<DshClient> {
  const client = await DshClient.spawn({
    command: process.execPath,
    args: [dshBin, '--profile', options.profile ?? 'sdk'],
    cwd: work,
    env: env(),
    ...options,
  })
  clients.push(client)
  return client
}

async function collect(
  stream: AsyncIterableIterator<SessionUpdate>,
  until: (u: SessionUpdate) => boolean,
): Promise<SessionUpdate[]> {
  const out: SessionUpdate[] = []
  for await (const update of stream) {
    out.push(update)
    if (until(update)) break
  }
  return out
}

describe('DshClient', () => {
  it('spawns dsh, streams a session’s events and deltas, and runs a prompt to its final text', async () => {
    mock.enqueue(
      reply.toolCalls([{ name: 'bash', arguments: { description: 'Run a command', command: 'echo from-client' } }]),
      reply.text('It printed from-client.'),
    )
    const client = await connect({ clientInfo: { name: 'client-test', version: '1' } })
    expect(client.server).toMatchObject({
      protocolVersion: 1,
      serverInfo: { name: 'dsh' },
      capabilities: { approvals: false, questions: false },
    })
    const session = await client.newSession({ cwd: work })
    const updates = collect(session.events(), (u) => u.type === 'event' && u.event.type === 'turn/end')
    expect(await session.run('What does echo print?')).toBe('It printed from-client.')
    const seen = await updates
    const text = seen.flatMap((u) => (u.type === 'delta' && u.kind === 'text' ? [u.delta] : [])).join('')
    expect(text).toBe('It printed from-client.')
    expect(seen.filter((u) => u.type === 'status').map((u) => (u.type === 'status' ? u.status : ''))).toEqual([
      'running',
    ])
    const events = seen.flatMap((u) => (u.type === 'event' ? [u.event.type] : []))
    expect(events).toContain('tool/result')
    expect(events.at(-1)).toBe('turn/end')

    const log = await session.readEvents()
    expect(log.at(-1)?.type).toBe('turn/end')
    expect((await session.readEvents(log.length - 3)).map((e) => e.seq)).toEqual([log.length - 2, log.length - 1])
  })

  it('cancels a running prompt and the one queued behind it, and rejects run() with RunError when not completed', async () => {
    mock.enqueue(reply.stall(2, reply.text('never ends')), reply.text('after the cancel'))
    const client = await connect()
    const session = await client.newSession({ cwd: work })
    const stream = session.events()
    const running = session.run('go')
    await collect(stream, (u) => u.type === 'delta')
    const queued = session.prompt('meanwhile')
    await collect(stream, (u) => u.type === 'queued')
    await session.cancel()
    expect((await queued).stopReason).toBe('cancelled')
    const error = await running.catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RunError)
    expect((error as RunError).result.stopReason).toBe('cancelled')
    expect(await session.prompt('again')).toMatchObject({ stopReason: 'completed', text: 'after the cancel' })
  })

  it('resumes in a new process, forks at a turn, and lists sessions', async () => {
    mock.enqueue(reply.text('one'), reply.text('two'), reply.text('three'), reply.text('forked'))
    const first = await connect()
    const session = await first.newSession({ cwd: work })
    await session.run('a')
    await session.run('b')
    await first.close()

    const second = await connect()
    await expect(second.prompt(session.id, 'not open')).rejects.toMatchObject({ code: -32001 })
    const resumed = await second.resumeSession(session.id)
    expect(await resumed.run('c')).toBe('three')
    const fork = await resumed.fork(1)
    expect(await fork.run('d')).toBe('forked')
    const users = mock.requests[3]?.body.messages
      .filter((m: { role: string }) => m.role === 'user')
      .map((m: { content: string }) => m.content)
    expect(users).toEqual(['a', 'd'])
    await fork.close()
    const listed = await second.listSessions({ cwd: work })
    expect(listed.sessions.map((s) => s.sessionId).sort()).toEqual([session.id, fork.id].sort())
  })

  it('answers approvals with onApproval: allow writes the file, reject does not', async () => {
    const write = (name: string) => reply.toolCalls([{ name: 'write', arguments: { file_path: name, content: 'x\n' } }])
    mock.enqueue(write('yes.txt'), reply.text('ok'), write('no.txt'), reply.text('ok'))
    const asked: string[] = []
    const client = await connect({
      onApproval: (request) => {
        asked.push(request.toolCall.arguments)
        return request.toolCall.arguments.includes('yes.txt')
          ? { decision: 'allow-once' }
          : { decision: 'reject', message: 'no' }
      },
    })
    expect(client.server.capabilities.approvals).toBe(true)
    const session = await client.newSession({ cwd: work, permissionPreset: 'read-only' })
    await session.run('write yes.txt')
    await session.run('write no.txt')
    expect(asked).toHaveLength(2)
    expect(existsSync(path.join(work, 'yes.txt'))).toBe(true)
    expect(existsSync(path.join(work, 'no.txt'))).toBe(false)
  })

  it('answers the model’s questions with onQuestion', async () => {
    const question = { id: 'side', question: 'Pick one', options: [{ label: 'left' }, { label: 'right' }] }
    mock.enqueue(
      reply.toolCalls([{ name: 'ask_user_question', arguments: { questions: [question] } }]),
      reply.text('right then'),
    )
    const client = await connect({
      onQuestion: (request) => ({
        answers: request.questions.map((q) => ({ question: q.question, selected: ['right'] })),
      }),
    })
    expect(await client.run('ask me', { cwd: work })).toBe('right then')
    expect(mock.requests[1]?.body.messages.find((m: { role: string }) => m.role === 'tool').content).toContain('right')
  })

  it('turns protocol errors into RpcError with the server’s code and field', async () => {
    const client = await connect()
    const error = await client.request('session/new', { cwd: 'relative' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RpcError)
    expect(error).toMatchObject({ code: -32602, data: { field: 'cwd' } })
    await expect(client.request('initialize', { protocolVersion: 1 })).rejects.toMatchObject({ code: -32004 })
  })

  it('configures a session: the settings it answers are in the next request, and bad ones name their field', async () => {
    mock.enqueue(reply.text('planned'))
    const client = await connect()
    const session = await client.newSession({ cwd: work })
    expect(await session.configure({})).toMatchObject({ model: 'deepseek-v4-flash', planMode: false })
    const settings = await session.configure({ model: 'deepseek-v4-pro', reasoningEffort: 'low', planMode: true })
    expect(settings).toEqual({
      model: 'deepseek-v4-pro',
      reasoningEffort: 'low',
      preset: 'workspace-write',
      network: 'proxy',
      planMode: true,
    })
    expect((await session.prompt('plan it')).text).toBe('planned')
    expect(mock.requests.at(-1)?.body).toMatchObject({ model: 'deepseek-v4-pro', reasoning_effort: 'low' })
    expect(JSON.stringify(mock.requests.at(-1)?.body.messages)).toContain('Plan mode')
    const refused = async (params: Record<string, unknown>) =>
      client.request('session/configure', { sessionId: session.id, ...params } as never).catch((e: unknown) => e)
    const unknownModel = await refused({ model: 'gpt-17' })
    expect(unknownModel).toMatchObject({ code: -32602, data: { field: 'model' } })
    expect((unknownModel as Error).message).toContain('unknown model "gpt-17"')
    expect(await refused({ reasoningEffort: 'extreme' })).toMatchObject({
      code: -32602,
      data: { field: 'reasoningEffort' },
    })
    expect(await refused({ preset: 'root' })).toMatchObject({ code: -32602, data: { field: 'preset' } })
    expect(await refused({ network: 'lan' })).toMatchObject({ code: -32602, data: { field: 'network' } })
    expect(await refused({ planMode: 'yes' })).toMatchObject({ code: -32602, data: { field: 'planMode' } })
    const missing = await client
      .request('session/configure', { sessionId: 'session-nope', planMode: true })
      .catch((e: unknown) => e)
    expect(missing).toMatchObject({ code: -32001 })
  })

  it('attaches to given streams', async () => {
    mock.enqueue(reply.text('attached'))
    const child = spawn(process.execPath, [dshBin, '--profile', 'sdk'], {
      cwd: work,
      env: env(),
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    const client = await DshClient.attach({ input: child.stdout, output: child.stdin })
    expect(await client.run('hello', { cwd: work })).toBe('attached')
    await client.close()
    expect(await exited).toBe(0)
    await expect(client.listSessions()).rejects.toBeInstanceOf(ConnectionClosedError)
  })

  it('closes cleanly: sessions saved, the process gone, later calls refused', async () => {
    mock.enqueue(reply.text('saved'))
    const client = await connect()
    const session = await client.newSession({ cwd: work })
    const stream = session.events()
    await session.run('save me')
    await client.close()
    await client.close()
    expect((await collect(stream, () => false)).length).toBeGreaterThan(0)
    await expect(client.listSessions()).rejects.toBeInstanceOf(ConnectionClosedError)
    const file = path.join(home, 'sessions', `${session.id}.jsonl.zst`)
    expect(existsSync(file) || existsSync(file.replace(/\.zst$/, ''))).toBe(true)
  })

  it('reports a server that cannot start', async () => {
    await expect(DshClient.spawn({ command: path.join(work, 'no-such-dsh') })).rejects.toThrow(/could not run/)
  })
})

describe('README example', () => {
  it('runs as written', async () => {
    const readme = readFileSync(path.join(import.meta.dirname, '../README.md'), 'utf8')
    const example = readme.match(/```js\n([\s\S]*?)```/)?.[1]
    expect(example, 'the README has a ```js example').toBeDefined()
    expect(example?.trim().split('\n').length).toBeLessThanOrEqual(10)
    mock.enqueue(
      reply.toolCalls([{ name: 'bash', arguments: { description: 'Run a command', command: 'ls | wc -l' } }]),
      reply.text('There are 2 files.'),
    )
    const shim = path.join(work, '..', 'bin')
    await mkdir(shim, { recursive: true })
    const { writeFile, chmod } = await import('node:fs/promises')
    await writeFile(path.join(shim, 'dsh'), `#!/bin/sh\nexec "${process.execPath}" "${dshBin}" "$@"\n`)
    await chmod(path.join(shim, 'dsh'), 0o755)
    await writeFile(path.join(work, 'a.txt'), 'a')
    await writeFile(path.join(work, 'b.txt'), 'b')
    const lib = new URL('../lib/index.js', import.meta.url).href
    const script = path.join(work, '..', 'example.mjs')
    await writeFile(script, (example as string).replace("'@dsh/sdk-client'", JSON.stringify(lib)))
    const run = spawn(process.execPath, [script], {
      cwd: work,
      env: { ...env(), PATH: `${shim}:${process.env.PATH}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    run.stdout.on('data', (chunk) => (stdout += chunk))
    run.stderr.on('data', (chunk) => (stderr += chunk))
    const code = await new Promise((resolve) => run.on('close', resolve))
    expect(code, stderr).toBe(0)
    expect(stdout).toBe('There are 2 files.\nanswer: There are 2 files.\n')
  })
})
