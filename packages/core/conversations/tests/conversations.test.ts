import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import * as agentPlugin from '@dsh/agent'
import * as loopPlugin from '@dsh/agent-loop'
import { Context } from '@dsh/cordis'
import * as llmPlugin from '@dsh/llm'
import * as deepseekPlugin from '@dsh/llm-deepseek'
import type { DeepSeekConfig } from '@dsh/llm-deepseek'
import { type MockLlm, reply, startMockLlm } from '@dsh/llm-mock'
import * as permissionPlugin from '@dsh/permission'
import * as planPlugin from '@dsh/plan-mode'
import * as questionsPlugin from '@dsh/questions'
import * as sessionPlugin from '@dsh/session'
import type { SessionId } from '@dsh/session'
import * as writerPlugin from '@dsh/session-persistence'
import * as jsonlPlugin from '@dsh/session-persistence-jsonl'
import * as systemPromptPlugin from '@dsh/system-prompt'
import * as toolsPlugin from '@dsh/tools'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import * as conversationsPlugin from '../src/index.ts'
import { ConversationError } from '../src/index.ts'

interface Tree {
  root: Context
  mock: MockLlm
  home: string
  work: string
  sessionsDir: string
}

const trees: Tree[] = []
let savedKey: string | undefined

/** A real plugin tree: sessions stored as JSONL under a temporary folder, the model a scripted mock. */
async function boot(shared?: { home: string; work: string; mock: MockLlm }): Promise<Tree> {
  savedKey ??= process.env.DEEPSEEK_API_KEY
  process.env.DEEPSEEK_API_KEY = 'sk-test'
  const mock = shared?.mock ?? (await startMockLlm())
  const home = shared?.home ?? (await realpath(await mkdtemp(join(tmpdir(), 'dsh-conversations-'))))
  const work = shared?.work ?? join(home, 'project-alpha')
  if (!shared) await mkdir(work)
  const sessionsDir = join(home, 'sessions')
  const root = new Context()
  await root.plugin(sessionPlugin)
  await root.plugin(llmPlugin)
  await root.plugin(deepseekPlugin, { baseURL: mock.url } as DeepSeekConfig)
  await root.plugin(systemPromptPlugin, {} as systemPromptPlugin.SystemPromptConfig)
  await root.plugin(toolsPlugin, {} as toolsPlugin.ToolsConfig)
  await root.plugin(permissionPlugin, {} as permissionPlugin.PermissionConfig)
  await root.plugin(planPlugin, {} as planPlugin.PlanModeConfig)
  await root.plugin(questionsPlugin, {} as questionsPlugin.QuestionsConfig)
  await root.plugin(jsonlPlugin, { root: sessionsDir })
  await root.plugin(writerPlugin, { batchDelayMs: 0 })
  await root.plugin(agentPlugin, {} as agentPlugin.AgentRegistryConfig)
  await root.plugin(loopPlugin, {} as never)
  await root.plugin(conversationsPlugin)
  const tree = { root, mock, home, work, sessionsDir }
  trees.push(tree)
  return tree
}

afterEach(async () => {
  const done = trees.splice(0)
  for (const tree of done) await tree.root.fiber.dispose()
  for (const mock of new Set(done.map((t) => t.mock))) await mock.close()
  for (const home of new Set(done.map((t) => t.home))) await rm(home, { recursive: true, force: true })
  if (savedKey === undefined) delete process.env.DEEPSEEK_API_KEY
  else process.env.DEEPSEEK_API_KEY = savedKey
})

const user = (text: string) => ({
  id: sessionPlugin.newMessageId(),
  role: 'user' as const,
  content: [{ type: 'text' as const, text }],
  source: { kind: 'user' as const },
})

/** The events stored on disk for a session (plain or sealed log). */
async function storedTypes(dir: string, id: string): Promise<{ type: string; data: any }[]> {
  const file = (await readdir(dir, { recursive: true })).find((f) => f.includes(id))
  if (!file) throw new Error(`no log for ${id} under ${dir}`)
  const raw = await readFile(join(dir, file))
  const text = file.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8')
  return text
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line))
}

describe('ctx.conversations', () => {
  it('a fork runs under the source model, effort, preset, network and plan mode, even when they changed after the fork point', async () => {
    const { root, mock } = await boot()
    mock.enqueue(reply.text('First answer.'))
    const source = await root.conversations.create({ cwd: (trees[0] as Tree).work })
    await root.conversations.prompt(source.id, user('Hello'))
    await root.conversations.configure(source.id, { preset: 'read-only', network: 'off', plan: true })
    await root.conversations.configure(source.id, { model: 'deepseek-v4-pro', reasoningEffort: 'low' })

    const fork = await root.conversations.fork(source.id, { turn: 1 })
    const view = await root.conversations.show(fork.id)
    expect(view).toMatchObject({ forkedFrom: source.id, preset: 'read-only', network: 'off', plan: true })
    expect(view).toMatchObject({ model: 'deepseek-v4-pro', reasoningEffort: 'low' })
    expect(fork.session.last('conversation/settings')?.data).toMatchObject({ model: 'deepseek-v4-pro' })
    expect(root.permission.preset(fork.id)).toBe('read-only')
    expect(root.planMode.isActive(fork.id)).toBe(true)
  })

  /** A conversation in a fresh tree that answered `prompt` with `answer` and was closed. */
  async function closedSession(prompt: string, answer: string) {
    const tree = await boot()
    tree.mock.enqueue(reply.text(answer))
    const agent = await tree.root.conversations.create({ cwd: tree.work })
    await tree.root.conversations.prompt(agent.id, user(prompt))
    await tree.root.conversations.close(agent.id)
    return { ...tree, agent }
  }

  it('search by folder finds the session, and a query matching nothing finds none', async () => {
    const { root, work, agent } = await closedSession('Say done', 'Done.')
    const found = await root.conversations.list({ query: 'project-alpha', limit: 10 })
    expect(found.sessions.map((s) => s.sessionId)).toEqual([agent.id])
    expect(found.sessions[0]).toMatchObject({ cwd: work, running: false })
    expect((await root.conversations.list({ query: 'project-beta', limit: 10 })).sessions).toEqual([])
  })

  it('a per-session model, effort and preset change is logged and holds after resume in a new process', async () => {
    const first = await boot()
    const agent = await first.root.conversations.create({ cwd: first.work })
    await first.root.conversations.configure(agent.id, {
      model: 'deepseek-v4-pro',
      reasoningEffort: 'max',
      preset: 'read-only',
    })
    await first.root.fiber.dispose()
    trees.splice(trees.indexOf(first), 1)

    const logged = await storedTypes(first.sessionsDir, agent.id)
    expect(logged.find((e) => e.type === 'conversation/settings')?.data).toMatchObject({
      model: 'deepseek-v4-pro',
      reasoningEffort: 'max',
    })
    expect(logged.find((e) => e.type === 'permission/preset')?.data).toEqual({ preset: 'read-only' })

    const second = await boot(first)
    second.mock.enqueue(reply.text('Resumed.'))
    await second.root.conversations.resume(agent.id)
    expect(await second.root.conversations.show(agent.id)).toMatchObject({
      model: 'deepseek-v4-pro',
      reasoningEffort: 'max',
      preset: 'read-only',
    })
    await second.root.conversations.prompt(agent.id, user('Go on'))
    const body = second.mock.requests.at(-1)?.body as { model: string }
    expect(body.model).toBe('deepseek-v4-pro')
  })

  it('show reads a stored log through the reader a surface gives, and opens it itself only without one', async () => {
    const { root, work, agent } = await closedSession('Keep this', 'Stored.')
    const persistence = root.sessionPersistence
    const open = persistence.open.bind(persistence)
    let opened = 0
    persistence.open = (id) => {
      opened++
      return open(id)
    }
    let read = 0
    const log = await open(agent.id as SessionId)
    const view = await root.conversations.show(agent.id, {
      read: async () => {
        read++
        return log
      },
    })
    expect(view).toMatchObject({ sessionId: agent.id, running: false, cwd: work })
    expect([read, opened]).toEqual([1, 0])
    await root.conversations.show(agent.id)
    expect([read, opened]).toEqual([1, 1])
  })

  it('delete refuses a session another process holds, and deletes one nobody holds', async () => {
    const { root, work, sessionsDir } = await boot()
    const held = await root.conversations.create({ cwd: work })
    await root.conversations.close(held.id)
    // Another live process holds the session: its lease beside the log names it.
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 60_000)'], { stdio: 'ignore' })
    try {
      const log = (await root.sessionPersistence.stat(held.id as SessionId)).file
      const lease = join(dirname(log), `${held.id}.lock`)
      await writeFile(lease, JSON.stringify({ pid: other.pid, host: hostname(), since: Date.now() }))
      const refused = await root.conversations.delete(held.id).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(ConversationError)
      expect(refused).toMatchObject({ kind: 'busy', details: { sessionId: held.id } })
      expect((refused as Error).message).toContain(`process ${other.pid}`)
      expect((await root.sessionPersistence.stat(held.id as SessionId)).id).toBe(held.id)
      await rm(lease)
    } finally {
      other.kill()
    }
    expect(await root.conversations.delete(held.id)).toEqual([held.id])
    await expect(root.conversations.show(held.id)).rejects.toMatchObject({ kind: 'not-found' })
    expect((await readdir(sessionsDir, { recursive: true })).filter((f) => f.includes(held.id))).toEqual([])
  })
})

describe('the approval and question broker', () => {
  /** A tool that writes the file it is given (outside the workspace it needs approval), and a way to call it. */
  async function writer(root: Context) {
    root.tools.register(
      root,
      toolsPlugin.defineTool({
        name: 'put',
        description: 'Writes a file.',
        parameters: z.object({ path: z.string() }),
        access: (args) => ({ kind: 'write', paths: [args.path] }),
        execute: async () => ({ content: 'written' }),
      }),
    )
    let calls = 0
    return (sessionId: string, cwd: string, target: string) =>
      root.tools.execute(
        { callId: `call-${++calls}` as never, name: 'put', arguments: JSON.stringify({ path: target }) },
        { signal: new AbortController().signal, cwd, sessionId, sessionState: new Map() },
      )
  }

  it('"allow for this session" is asked once per session and kind of action, and a preset change asks again', async () => {
    const { root, home, work } = await boot()
    const put = await writer(root)
    const asked: string[] = []
    root.conversations.broker.setApprover(root, async (prompt) => {
      asked.push(`${prompt.sessionId} ${prompt.call.name} ${prompt.preset}`)
      return { decision: 'allow-session' }
    })
    const agent = await root.conversations.create({ cwd: work })
    expect((await put(agent.id, work, join(home, 'a.txt'))).isError).toBe(false)
    expect((await put(agent.id, work, join(home, 'b.txt'))).isError).toBe(false)
    expect(asked).toEqual([`${agent.id} put workspace-write`])
    const decisions = agent.session.events.filter((e) => e.type === 'permission/decision').map((e) => e.data)
    expect(decisions).toMatchObject([{ decision: 'ask', answer: 'allow-session' }, { decision: 'allow' }])

    const other = await root.conversations.create({ cwd: work })
    await put(other.id, work, join(home, 'c.txt'))
    expect(asked).toHaveLength(2)

    await root.conversations.configure(agent.id, { preset: 'read-only' })
    await put(agent.id, work, join(home, 'd.txt'))
    expect(asked).toEqual([
      `${agent.id} put workspace-write`,
      `${other.id} put workspace-write`,
      `${agent.id} put read-only`,
    ])
  })

  it('a rejection reaches the model with what the user said; an answer of another shape denies the call', async () => {
    const { root, home, work } = await boot()
    const put = await writer(root)
    const answers = [{ decision: 'reject', message: 'not there' }, { decision: 'maybe' }]
    root.conversations.broker.setApprover(root, async () => answers.shift() as never)
    const agent = await root.conversations.create({ cwd: work })
    const rejected = await put(agent.id, work, join(home, 'a.txt'))
    expect(toolsPlugin.textOf(rejected.content)).toContain('The user rejected this call. The user said: not there')
    const odd = await put(agent.id, work, join(home, 'a.txt'))
    expect(toolsPlugin.textOf(odd.content)).toContain(
      'Asking for approval failed (the approver answered {"decision":"maybe"})',
    )
  })

  it('a subagent session never reaches the user, whoever asks', async () => {
    const { root, work } = await boot()
    let asked = 0
    root.conversations.broker.setApprover(root, async () => {
      asked++
      return { decision: 'allow-once' }
    })
    const parent = await root.conversations.create({ cwd: work })
    const child = root.sessions.create({ cwd: work, parentSession: parent.id })
    root.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'a hook wants to know' }))
    const put = await writer(root)
    const result = await put(child.id, work, join(work, 'inside.txt'))
    expect(toolsPlugin.textOf(result.content)).toContain('subagents cannot ask for approval')
    expect(root.tools.canApprove(child.id)).toBe(false)
    expect(root.tools.canApprove(parent.id)).toBe(true)
    expect(asked).toBe(0)
  })

  it('questions go to the asker a surface registered, and without one the tool says no user is there', async () => {
    const { root } = await boot()
    const question = { question: 'Which?', options: [{ label: 'a' }, { label: 'b' }] }
    await expect(
      root.questions.ask({ sessionId: 's', callId: 'c', questions: [question] }, new AbortController().signal),
    ).rejects.toThrow(questionsPlugin.NO_ASKER)
    const off = root.conversations.broker.setAsker(root, async (request) =>
      request.questions.map((q) => ({ question: q.question, selected: ['b'] })),
    )
    expect(
      await root.questions.ask({ sessionId: 's', callId: 'c', questions: [question] }, new AbortController().signal),
    ).toEqual([{ question: 'Which?', selected: ['b'] }])
    off()
  })
})
