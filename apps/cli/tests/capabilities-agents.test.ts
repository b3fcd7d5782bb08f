import { existsSync, readdirSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type MockReply, type RecordedRequest, reply } from '@dsh/llm-mock'
import { repoRoot, runDsh, startDsh } from '@dsh/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { serveHttp } from '../../../packages/mcp/mcp/tests/fixtures/tools.mjs'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { type LoggedEvent, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

afterEach(() => t.mock.setFallback(undefined))

type Message = { role: string; content: unknown; tool_calls?: unknown[] }
const messages = (req: RecordedRequest) => (req.body as { messages: Message[] }).messages
const systemText = (req: RecordedRequest) => String(messages(req).find((m) => m.role === 'system')?.content ?? '')
const firstUser = (req: RecordedRequest) => String(messages(req).find((m) => m.role === 'user')?.content ?? '')
const lastTool = (req: RecordedRequest) =>
  String(
    messages(req)
      .filter((m) => m.role === 'tool')
      .at(-1)?.content ?? '',
  )
const hasToolResult = (req: RecordedRequest) => messages(req).some((m) => m.role === 'tool')
const toolNames = (req: RecordedRequest) =>
  ((req.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((tool) => tool.function.name)
const isChild = (req: RecordedRequest) => systemText(req).includes('You are a subagent')

/**
 * Answers the parent (whose first message is the task) and the child (whose
 * system prompt says it is a subagent) from what each request holds: the
 * first reply before any tool result, the second after. Anything else (a
 * title or summary request from another plugin) gets a short text.
 */
function route(
  task: string,
  parent: [MockReply, (req: RecordedRequest) => MockReply],
  child: [MockReply, (req: RecordedRequest) => MockReply],
) {
  t.mock.setFallback((req) => {
    const [first, then] = isChild(req)
      ? child
      : firstUser(req) === task
        ? parent
        : [reply.text('Untitled'), () => reply.text('Untitled')]
    return hasToolResult(req) ? then(req) : first
  })
}

const delegate = (prompt: string) =>
  reply.toolCalls([{ name: 'subagent', arguments: { description: 'look it up', prompt } }])

/** Runs headless with `--json` (and an overlay patch, which the launcher reads before the app arguments). */
async function run(task: string, extra: string[] = [], patch?: string) {
  const launcher = ['--profile', 'headless', ...(patch ? ['--patch', patch] : [])]
  const result = await runDsh([...launcher, '--json', ...extra, task], { home: t.home, cwd: t.work, env: t.env() })
  const lines = result.stdout
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
  return { ...result, sessionId: String(lines[0]?.sessionId ?? ''), final: lines.at(-1) }
}

function storedSessions(): string[] {
  const dir = path.join(t.home, 'sessions')
  if (!existsSync(dir)) return []
  return [...new Set(readdirSync(dir).map((file) => file.replace(/\.jsonl(\.zst)?$/, '')))]
}

async function childOf(
  parentId: string,
): Promise<{ id: string; header: Record<string, unknown>; events: LoggedEvent[] }> {
  for (const id of storedSessions()) {
    if (id === parentId) continue
    const log = await readSessionLog(t.home, id)
    if (log.header.parentSession === parentId) return { id, ...log }
  }
  throw new Error(`no stored session has parent ${parentId}; stored: ${storedSessions().join(', ')}`)
}

describe('subagents', () => {
  it('a subagent does part of the task and its answer comes back as the task result', async () => {
    await writeFile(path.join(t.work, 'notes.txt'), 'the deploy code is 4711\n')
    const task = 'find the deploy code and report it'
    route(
      task,
      [
        delegate('Read notes.txt and answer with the deploy code only.'),
        (req) => reply.text(`The subagent found: ${lastTool(req)}`),
      ],
      [
        reply.toolCalls([{ name: 'read', arguments: { file_path: 'notes.txt' } }]),
        (req) => reply.text(lastTool(req).includes('4711') ? '4711' : 'no code found'),
      ],
    )
    const result = await run(task)
    expect(result.code).toBe(0)
    expect(result.final).toMatchObject({ type: 'result', reason: 'completed', text: 'The subagent found: 4711' })

    const child = await childOf(result.sessionId)
    expect(child.header).toMatchObject({ parentSession: result.sessionId, cwd: t.work, title: 'look it up' })
    expect(child.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
    expect(child.events.some((e) => e.type === 'assistant/message' && e.data.usage)).toBe(true)
    const parent = await readSessionLog(t.home, result.sessionId)
    const taskResult = parent.events.find((e) => e.type === 'tool/result' && e.data.name === 'subagent')
    expect(taskResult?.data.meta).toEqual({ sessionId: child.id })
    const childRequests = t.mock.requests.filter(isChild)
    expect(childRequests).toHaveLength(2)
    expect(toolNames(childRequests[0] as RecordedRequest)).toContain('read')
    expect(toolNames(childRequests[0] as RecordedRequest)).not.toContain('subagent')
    expect(toolNames(t.mock.requests[0] as RecordedRequest)).toContain('subagent')
  })

  it('Ctrl+C during the child stream cancels both turns and saves both logs', async () => {
    const task = 'delegate something slow'
    route(
      task,
      [delegate('Think out loud for a long time.'), () => reply.text('unused')],
      [reply.stall(2, reply.text('this reply never finishes streaming')), () => reply.text('unused')],
    )
    const running = startDsh(['--profile', 'headless', '--json', task], { home: t.home, cwd: t.work, env: t.env() })
    await running.waitFor(/"name":"subagent"/, { stream: 'stdout' })
    while (!t.mock.requests.some(isChild)) await t.mock.waitForRequests(t.mock.requests.length + 1)
    const result = await running.kill('SIGINT')
    expect(result.code).toBe(130)
    const parentId = JSON.parse(result.stdout.split('\n')[0] as string).sessionId as string
    const parent = await readSessionLog(t.home, parentId)
    expect(parent.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    expect(parent.events.find((e) => e.type === 'tool/result' && e.data.name === 'subagent')?.data.error.code).toBe(
      'CANCELLED',
    )
    const child = await childOf(parentId)
    expect(child.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted', cause: 'parent' } })
  })

  it('a child is denied a call that needs approval, saying subagents cannot ask', async () => {
    const task = 'have a helper write a file'
    route(
      task,
      [delegate('Write "hello" into out.txt.'), (req) => reply.text(`Helper said: ${lastTool(req)}`)],
      [
        reply.toolCalls([{ name: 'write', arguments: { file_path: 'out.txt', content: 'hello' } }]),
        (req) => reply.text(`I could not write: ${lastTool(req)}`),
      ],
    )
    const result = await run(task, ['--permission', 'read-only'])
    expect(result.code).toBe(0)
    expect(existsSync(path.join(t.work, 'out.txt'))).toBe(false)
    const child = await childOf(result.sessionId)
    const denied = child.events.find((e) => e.type === 'tool/result' && e.data.name === 'write')
    expect(denied?.data.error.code).toBe('DENIED')
    expect(denied?.data.error.message).toContain('subagents cannot ask for approval')
    expect(child.events.find((e) => e.type === 'permission/decision')?.data).toMatchObject({
      decision: 'deny',
      tool: 'write',
      preset: 'read-only',
    })
    expect(result.final.text).toContain('subagents cannot ask for approval')
  })
})

describe('MCP', () => {
  const fixture = path.join(repoRoot, 'packages/mcp/mcp/tests/fixtures/server.mjs')

  async function mcpPatch(servers: Record<string, unknown>): Promise<string> {
    const file = path.join(t.root, 'mcp.patch.yml')
    await writeFile(file, JSON.stringify([{ id: 'mcp', config: { servers } }]))
    return file
  }

  const addTwoAndThree = (server: string) => (req: RecordedRequest) =>
    hasToolResult(req)
      ? reply.text(`The server says ${lastTool(req)}.`)
      : reply.toolCalls([{ name: `mcp__${server}__add`, arguments: { a: 2, b: 3 } }])

  it('the model calls a tool of a stdio MCP server and reads its result in the next request', async () => {
    const patch = await mcpPatch({ fx: { command: process.execPath, args: [fixture] } })
    t.mock.setFallback(addTwoAndThree('fx'))
    const result = await run('add 2 and 3', ['--permission', 'danger-full-access'], patch)
    expect(result.code).toBe(0)
    expect(result.final.text).toBe('The server says 5.')
    const [first, second] = t.mock.requests
    const add = (first?.body.tools as { function: { name: string; parameters: unknown } }[]).find(
      (tool) => tool.function.name === 'mcp__fx__add',
    )
    expect(add?.function.parameters).toEqual({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
      additionalProperties: false,
    })
    expect(lastTool(second as RecordedRequest)).toBe('5')
  })

  it('without danger-full-access the call needs approval, which headless cannot give', async () => {
    const patch = await mcpPatch({ fx: { command: process.execPath, args: [fixture] } })
    t.mock.setFallback(addTwoAndThree('fx'))
    const result = await run('add 2 and 3', [], patch)
    expect(result.code).toBe(0)
    expect(lastTool(t.mock.requests[1] as RecordedRequest)).toMatch(
      /permission to run tool "mcp__fx__add" was denied: .*outside the sandbox/,
    )
  })

  it('a crashing MCP server is reported on stderr and the run still completes', async () => {
    const patch = await mcpPatch({ broken: { command: process.execPath, args: [fixture, '--crash-on-start'] } })
    t.mock.enqueue(reply.text('Done without it.'))
    const result = await t.headless(['--patch', patch, 'hello'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Done without it.\n')
    expect(result.stderr).toMatch(
      /server "broken" failed to start \(.*fixture: cannot start, the database is missing.*\)/,
    )
  })

  describe('over streamable HTTP', () => {
    let served: Awaited<ReturnType<typeof serveHttp>> | undefined
    afterEach(() => served?.close())

    it('the model calls a tool of an HTTP MCP server', async () => {
      served = await serveHttp()
      const patch = await mcpPatch({ web: { url: served.url } })
      t.mock.setFallback(addTwoAndThree('web'))
      const result = await run('add 2 and 3', ['--permission', 'danger-full-access'], patch)
      expect(result.code).toBe(0)
      expect(result.final.text).toBe('The server says 5.')
    })
  })
})
