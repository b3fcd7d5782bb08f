import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Agent } from '@dsh/agent'
import type { Context } from '@dsh/cordis'
import * as permissionPlugin from '@dsh/permission'
import type { PermissionConfig } from '@dsh/permission'
import type { SessionEvent } from '@dsh/session'
import { describe, expect, it } from 'vitest'
// The agent loop's own harness: a real spine (sessions, llm, tools, loop, persistence) against the scripted mock server.
import { type Harness, harnessPerTest, lastTurnEnd, ofType } from '../../../core/agent-loop/tests/harness.ts'
import { type MockReply, type RecordedRequest, reply } from '../../../test-support/llm-mock/src/index.ts'
import * as subagent from '../src/index.ts'
import { Config, type SubagentConfig } from '../src/index.ts'

const setup = harnessPerTest()
/** The plugin's config with its defaults filled in. */
const settings = (partial: Partial<SubagentConfig>) => Config(partial as SubagentConfig)

async function start(
  config: Partial<SubagentConfig> = {},
  permission: Partial<PermissionConfig> = {},
): Promise<Harness> {
  const h = await setup({ persistence: true })
  await h.root.plugin(permissionPlugin, permission as PermissionConfig)
  await h.root.plugin(subagent, settings(config))
  return h
}

type Body = { messages: { role: string; content: unknown }[]; tools?: { function: { name: string } }[] }
const body = (req: RecordedRequest) => req.body as Body
const systemText = (req: RecordedRequest) => String(body(req).messages.find((m) => m.role === 'system')?.content ?? '')
const toolNames = (req: RecordedRequest) => (body(req).tools ?? []).map((t) => t.function.name)
const isChild = (req: RecordedRequest) => systemText(req).includes('You are a subagent')
const lastToolMessage = (req: RecordedRequest) =>
  String(
    body(req)
      .messages.filter((m) => m.role === 'tool')
      .at(-1)?.content ?? '',
  )
const task = (prompt: string, extra: Record<string, unknown> = {}) =>
  reply.toolCalls([{ name: 'subagent', arguments: { description: 'look around', prompt, ...extra } }])

/** Answers the parent and each child from what the request holds, in turn order for each of them. */
function route(
  h: Harness,
  parent: Array<(req: RecordedRequest) => MockReply>,
  child: Array<(req: RecordedRequest) => MockReply>,
) {
  h.mock.setFallback((req) => {
    const queue = isChild(req) ? child : parent
    const next = queue.shift()
    if (!next) throw new Error(`no scripted reply left for the ${isChild(req) ? 'child' : 'parent'}`)
    return next(req)
  })
}

function created(h: Harness): Agent[] {
  const agents: Agent[] = []
  h.root.on('agent/created', (agent) => void agents.push(agent))
  return agents
}

function taskResult(agent: Agent): SessionEvent<'tool/result'> {
  const result = ofType(agent, 'tool/result').find((e) => e.data.name === 'subagent')
  if (!result) throw new Error('the parent logged no subagent result')
  return result
}

function storedLog(h: Harness, id: string): boolean {
  const file = path.join(h.sessionsDir, `${id}.jsonl`)
  return existsSync(file) || existsSync(`${file}.zst`)
}

describe('the subagent tool', () => {
  it("runs a child in its own linked session and returns the child's final answer", async () => {
    const h = await start()
    await writeFile(path.join(h.workspace, 'notes.txt'), 'the password is swordfish\n')
    const agents = created(h)
    route(
      h,
      [
        () => task('Read notes.txt and tell me the password.'),
        (req) => reply.text(`The child says: ${lastToolMessage(req)}`),
      ],
      [
        () => reply.toolCalls([{ name: 'read', arguments: { file_path: 'notes.txt' } }]),
        (req) => reply.text(lastToolMessage(req).includes('swordfish') ? 'swordfish' : 'not found'),
      ],
    )
    const parent = await h.createAgent()
    parent.followup('find the password')
    await parent.whenIdle()

    expect(lastTurnEnd(parent).data.reason).toBe('completed')
    const result = taskResult(parent)
    expect(result.data.error).toBeUndefined()
    const child = agents.find((a) => a !== parent) as Agent
    expect(result.data.meta).toEqual({ sessionId: child.id })
    expect(lastToolMessage(h.mock.requests.at(-1) as RecordedRequest)).toBe('swordfish')
    expect(child.session.meta).toMatchObject({ parentSession: parent.id, cwd: h.workspace, title: 'look around' })
    expect(h.root.agents.get(child.id)).toBeUndefined()
    expect(h.root.sessions.get(child.id)).toBeUndefined()
    expect(storedLog(h, child.id)).toBe(true)

    const [first, childFirst] = h.mock.requests
    expect(toolNames(first as RecordedRequest)).toContain('subagent')
    expect(toolNames(childFirst as RecordedRequest)).not.toContain('subagent')
    expect(toolNames(childFirst as RecordedRequest)).toContain('read')
    expect(systemText(first as RecordedRequest)).not.toContain('You are a subagent')
    // The child's usage and header are in its own log.
    expect(ofType(child, 'assistant/message').some((e) => e.data.usage)).toBe(true)
    expect(child.session.last('request/header')?.data.tools.map((t) => t.name)).not.toContain('subagent')
  })

  it("limits a typed child to its tools, refuses the others, and adds the type's prompt", async () => {
    const h = await start({
      types: { reader: { description: 'Reads files.', tools: ['read'], exclude: [], prompt: 'Only ever read.' } },
      defaultType: 'reader',
    })
    const agents = created(h)
    route(
      h,
      [() => task('Run ls.'), () => reply.text('ok')],
      [
        () => reply.toolCalls([{ name: 'bash', arguments: { command: 'ls' } }]),
        (req) => reply.text(`child saw: ${lastToolMessage(req)}`),
      ],
    )
    const parent = await h.createAgent()
    parent.followup('go')
    await parent.whenIdle()
    const childRequest = h.mock.requests.find(isChild) as RecordedRequest
    expect(toolNames(childRequest)).toEqual(['read'])
    expect(systemText(childRequest)).toContain('Only ever read.')
    const child = agents.find((a) => a !== parent) as Agent
    expect(ofType(child, 'tool/result')[0]?.data.error).toMatchObject({
      code: 'TOOL_NOT_AVAILABLE',
      message: expect.stringContaining('tool "bash" is not available'),
    })
    expect(JSON.stringify(taskResult(parent).data.message)).toContain('child saw: Error: tool')
  })

  it('lets children nest up to maxDepth and no further', async () => {
    const h = await start({ maxDepth: 2 })
    const firstUser = (req: RecordedRequest) => String(body(req).messages.find((m) => m.role === 'user')?.content ?? '')
    const seen: string[][] = []
    h.mock.setFallback((req) => {
      seen.push(toolNames(req))
      if (firstUser(req).startsWith('GRANDCHILD'))
        return body(req).messages.some((m) => m.role === 'tool')
          ? reply.text('grandchild done')
          : task('GRANDCHILD: try to nest again.')
      if (firstUser(req).startsWith('CHILD'))
        return body(req).messages.some((m) => m.role === 'tool')
          ? reply.text(`child got: ${lastToolMessage(req)}`)
          : task('GRANDCHILD: do it.')
      return body(req).messages.some((m) => m.role === 'tool')
        ? reply.text(`parent got: ${lastToolMessage(req)}`)
        : task('CHILD: delegate.')
    })
    const parent = await h.createAgent()
    parent.followup('go')
    await parent.whenIdle()
    expect(seen[0]).toContain('subagent')
    expect(seen[1]).toContain('subagent')
    expect(seen[2]).not.toContain('subagent')
    // The grandchild's own attempt to call subagent is refused: the tool is not available to it.
    expect(seen.length).toBe(6)
    const final = textOfLast(parent)
    expect(final).toBe('parent got: child got: grandchild done')
  })

  it('refuses to start a child from a session already at the depth limit', async () => {
    const h = await start({ maxDepth: 1 })
    const parent = await h.createAgent()
    const child = h.root.sessions.create({ cwd: h.workspace, parentSession: parent.id })
    const result = await h.root.tools.execute(
      { callId: 'call-1' as never, name: 'subagent', arguments: JSON.stringify({ description: 'x', prompt: 'y' }) },
      { signal: new AbortController().signal, cwd: h.workspace, sessionId: child.id, sessionState: new Map() },
    )
    expect(result.error?.code).toBe('SUBAGENT_DEPTH')
    expect(h.mock.requests).toEqual([])
  })

  it("cancelling the parent cancels the child's turn and saves the child's log", async () => {
    const h = await start()
    const agents = created(h)
    route(h, [() => task('Talk slowly.')], [() => reply.stall(2, reply.text('this reply never finishes streaming'))])
    const parent = await h.createAgent()
    parent.followup('go')
    await h.mock.waitForRequests(2)
    const child = agents.find((a) => a !== parent) as Agent
    parent.cancel('user')
    await parent.whenIdle()
    expect(lastTurnEnd(parent).data).toMatchObject({ reason: 'aborted', cause: 'user' })
    expect(taskResult(parent).data.error?.code).toBe('CANCELLED')
    expect(child.session.last('turn/end')?.data).toMatchObject({ reason: 'aborted', cause: 'parent' })
    expect(h.root.sessions.get(child.id)).toBeUndefined()
    expect(storedLog(h, child.id)).toBe(true)
  })

  it("reports a failed child as an error result with the child's error code", async () => {
    const h = await start()
    route(
      h,
      [() => task('Fail.'), (req) => reply.text(`parent read: ${lastToolMessage(req)}`)],
      [() => reply.error(400, { message: 'the request is malformed' })],
    )
    const parent = await h.createAgent()
    parent.followup('go')
    await parent.whenIdle()
    const result = taskResult(parent)
    expect(result.data.error?.code).toBe('INVALID_REQUEST')
    expect(result.data.error?.message).toMatch(
      /^Error: the subagent \(session session-[\w-]+\) failed with INVALID_REQUEST: /,
    )
    expect(result.data.meta).toMatchObject({ sessionId: expect.stringMatching(/^session-/) })
    expect(lastTurnEnd(parent).data.reason).toBe('completed')
  })

  it('a child is denied what needs approval, without asking the approver', async () => {
    const h = await start({}, { preset: 'read-only' })
    const asked: string[] = []
    await h.root.plugin({
      name: 'test-broker',
      inject: ['tools'],
      apply(ctx: Context) {
        ctx.tools.setBroker(ctx, {
          approve: async ({ call }) => {
            asked.push(call.name)
            return { allowed: true, answer: 'allow-once' }
          },
          canAsk: () => true,
          forget: () => {},
        })
      },
    })
    route(
      h,
      [() => task('Write a file.'), () => reply.text('done')],
      [
        () => reply.toolCalls([{ name: 'write', arguments: { file_path: 'out.txt', content: 'x' } }]),
        (req) => reply.text(`child saw: ${lastToolMessage(req)}`),
      ],
    )
    const parent = await h.createAgent()
    parent.followup('go')
    await parent.whenIdle()
    expect(asked).toEqual([])
    expect(existsSync(path.join(h.workspace, 'out.txt'))).toBe(false)
    expect(JSON.stringify(taskResult(parent).data.message)).toContain('subagents cannot ask for approval')
  })
})

describe('background children', () => {
  it("follow their parent's later preset and network change, so they never keep more than it has", async () => {
    const h = await start({}, { preset: 'workspace-write' })
    const agents = created(h)
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    h.mock.setFallback(async (req) => {
      if (isChild(req)) {
        await held
        return reply.text('child done')
      }
      return lastToolMessage(req) ? reply.text('parent done') : task('Work.', { run_in_background: true })
    })
    const parent = await h.createAgent()
    parent.followup('go')
    await parent.whenIdle()
    const child = agents.find((a) => a !== parent) as Agent
    expect(child.session.meta.parentSession).toBe(parent.id)
    expect(h.root.permission.preset(child.id)).toBe('workspace-write')

    h.root.permission.setPreset(parent.id, 'read-only')
    h.root.permission.setNetwork(parent.id, 'off')
    expect(h.root.permission.preset(child.id)).toBe('read-only')
    expect(h.root.permission.network(child.id)).toBe('off')
    expect(child.session.last('permission/preset')?.data.preset).toBe('read-only')
    release()
    await child.whenIdle()
  })
})

describe('the plugin', () => {
  it('takes its tool and prompt section away when disposed', async () => {
    const h = await setup()
    await h.root.plugin(permissionPlugin, {} as PermissionConfig)
    const fiber = h.root.plugin(subagent, settings({}))
    await fiber
    expect(h.root.tools.get('subagent')).toBeDefined()
    await fiber.dispose()
    expect(h.root.tools.get('subagent')).toBeUndefined()
  })

  it('refuses a default type that is not defined, naming the field', async () => {
    const h = await setup()
    const fiber = h.root.plugin(subagent, settings({ defaultType: 'nope' }))
    await expect(fiber).rejects.toThrow(/config.defaultType "nope" is not one of config.types \(general\)/)
    h.warnings.length = 0
  })
})

function textOfLast(agent: Agent): string {
  const last = ofType(agent, 'assistant/message').at(-1)
  return last?.data.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? ''
}
