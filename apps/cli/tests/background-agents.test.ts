// Background subagents and background jobs through the real bins: the child works on while the parent goes on,
// the parent steers and stops it, and each end reaches the parent's model as a notice at its next step.
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type MockReply, type RecordedRequest, reply } from '@dsh/llm-mock'
import { afterEach, describe, expect, it } from 'vitest'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'
import { type RpcMessage, SdkWire } from './support/sdk-wire.ts'

const t = useMockedHeadless()
afterEach(() => t.mock.setFallback(undefined))

type Chat = { role: string; content: unknown }
const messages = (req: RecordedRequest) => (req.body as { messages: Chat[] }).messages
const text = (m: Chat) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))
const systemText = (req: RecordedRequest) =>
  text(messages(req).find((m) => m.role === 'system') ?? { role: '', content: '' })
const firstUser = (req: RecordedRequest) =>
  text(messages(req).find((m) => m.role === 'user') ?? { role: '', content: '' })
const userTexts = (req: RecordedRequest) =>
  messages(req)
    .filter((m) => m.role === 'user')
    .map(text)
/** Everything the user side of a request says, one message a line. */
const userText = (req: RecordedRequest) => userTexts(req).join('\n')
const isChild = (req: RecordedRequest) => systemText(req).includes('You are a subagent')
const toolCount = (req: RecordedRequest) => toolTexts(req).length
/** The agent id a `subagent` call with run_in_background returned, read from the request's tool results. */
const childId = (req: RecordedRequest) => {
  const id = toolTexts(req)
    .join('\n')
    .match(/Started background subagent (session-[\w-]+)/)?.[1]
  if (!id) throw new Error('the request carries no started background subagent')
  return id
}
const background = (description: string, prompt: string) =>
  reply.toolCalls([{ name: 'subagent', arguments: { description, prompt, run_in_background: true } }])
const call = (name: string, args: Record<string, unknown>) => reply.toolCalls([{ name, arguments: args }])

/** A promise that resolves once `open()` is called: holds a scripted reply back until the test lets it go. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { opened, open }
}

/** Routes each request by who sends it: the child (its system prompt), the parent (its task), else a short title. */
function route(task: string, parent: (req: RecordedRequest) => MockReply | Promise<MockReply>, child: typeof parent) {
  t.mock.setFallback((req) => (isChild(req) ? child(req) : firstUser(req) === task ? parent(req) : reply.text('Title')))
}
const parentRequests = (task: string) => t.mock.requests.filter((r) => !isChild(r) && firstUser(r) === task)

async function sdkSession(capabilities: Record<string, boolean> = {}, extra: Record<string, unknown> = {}) {
  const wire = new SdkWire(['--profile', 'sdk'], { home: t.home, cwd: t.work, env: t.env() })
  await wire.call('initialize', { protocolVersion: 1, clientInfo: { name: 'test' }, capabilities })
  const sessionId: string = (await wire.call('session/new', { cwd: t.work, ...extra })).sessionId
  return { wire, sessionId }
}

/** Resolves when the SDK reports the end of a turn of a session other than `parent` (the child's). */
const childTurnEnd = (wire: SdkWire, parent: string) =>
  wire.waitFor(
    (m) => m.method === 'session/event' && m.params.sessionId !== parent && m.params.event.type === 'turn/end',
    "the child's turn end",
  )

describe('background subagents (SDK)', () => {
  it("run on after the call returns, take a message mid-turn, and their answer reaches the parent's next step", async () => {
    const task = 'Survey the repository.'
    const { wire, sessionId } = await sdkSession()
    const go = gate()
    const ended = childTurnEnd(wire, sessionId)
    route(
      task,
      async (req) => {
        const step = toolCount(req)
        if (step === 0) return background('count files', 'Count the files.')
        if (step === 1) return call('send_message', { agent_id: childId(req), message: 'Count only the .ts files.' })
        if (step === 2) {
          go.open()
          await ended
          return call('list_agents', {})
        }
        return reply.text('All done.')
      },
      async (req) => {
        if (toolCount(req) === 0) {
          await go.opened
          return call('bash', { command: 'echo child-was-here', description: 'Say hi' })
        }
        return reply.text('There are 3 .ts files.')
      },
    )
    const result = await wire.call('session/prompt', { sessionId, content: task })
    expect(result).toMatchObject({ stopReason: 'completed', text: 'All done.' })

    const parent = parentRequests(task)
    const started = toolTexts(parent[1])[0] ?? ''
    expect(started).toMatch(/^Started background subagent session-/)
    const child = childId(parent[1] as RecordedRequest)
    expect(toolTexts(parent[2])[1]).toContain(`Delivered: ${child} is working`)
    // The message joined the child's running turn at its next step.
    const childRequests = t.mock.requests.filter(isChild)
    expect(childRequests).toHaveLength(2)
    expect(userText(childRequests[1] as RecordedRequest)).toContain('Count only the .ts files.')
    // The parent's step after the child's end carries the child's answer as a notice.
    const last = parent.at(-1) as RecordedRequest
    expect(userText(last)).toContain(`[Background subagent ${child} ("count files") finished.]`)
    expect(userText(last)).toContain('There are 3 .ts files.')
    expect(userText(parent[2] as RecordedRequest)).not.toContain('There are 3 .ts files.')

    // Over the SDK, the child's own events arrive as session/event naming the child session.
    const childEvents = wire.notifications('session/event', child).map((p) => p.event.type)
    expect(childEvents).toEqual(expect.arrayContaining(['turn/start', 'tool/result', 'assistant/message', 'turn/end']))
    expect((await wire.shutdown()).code).toBe(0)
  })

  it('interrupt_agent stops a running child, whose stop reaches the parent as a notice', async () => {
    const task = 'Start and stop a helper.'
    const { wire, sessionId } = await sdkSession()
    const ended = childTurnEnd(wire, sessionId)
    route(
      task,
      async (req) => {
        const step = toolCount(req)
        if (step === 0) return background('slow helper', 'Think for a long time.')
        if (step === 1) return call('interrupt_agent', { agent_id: childId(req) })
        if (step === 2) {
          await ended
          return call('list_agents', {})
        }
        return reply.text('Stopped it.')
      },
      // The child's reply starts and then hangs: only the interrupt ends it.
      () => reply.stall(1),
    )
    const result = await wire.call('session/prompt', { sessionId, content: task })
    expect(result).toMatchObject({ stopReason: 'completed', text: 'Stopped it.' })
    const parent = parentRequests(task)
    const child = childId(parent[1] as RecordedRequest)
    expect(toolTexts(parent[2])[1]).toContain(`Interrupt requested: ${child}`)
    const end = (await ended).params.event
    expect(end.data).toMatchObject({ reason: 'aborted', cause: 'parent' })
    expect(toolTexts(parent[3])[2]).toContain(`${child}: idle (last turn: aborted)`)
    expect(userText(parent[3] as RecordedRequest)).toContain(
      `[Background subagent ${child} ("slow helper") was stopped (parent).]`,
    )
    expect((await wire.shutdown()).code).toBe(0)
  })

  it('an idle parent does not start a turn of its own: the notice waits for its next prompt', async () => {
    const task = 'Start a helper and stop.'
    const { wire, sessionId } = await sdkSession()
    const go = gate()
    const ended = childTurnEnd(wire, sessionId)
    route(
      task,
      (req) => {
        if (userTexts(req).some((u) => u.includes('What did it find?'))) return reply.text('It found the answer.')
        return toolCount(req) === 0 ? background('find it', 'Find it.') : reply.text('Started it.')
      },
      async () => {
        await go.opened
        return reply.text('The answer is 42.')
      },
    )
    expect(await wire.call('session/prompt', { sessionId, content: task })).toMatchObject({ text: 'Started it.' })
    const before = parentRequests(task).length
    go.open()
    await ended
    expect(parentRequests(task)).toHaveLength(before)
    const second = await wire.call('session/prompt', { sessionId, content: 'What did it find?' })
    expect(second).toMatchObject({ text: 'It found the answer.' })
    const last = parentRequests(task).at(-1) as RecordedRequest
    expect(parentRequests(task)).toHaveLength(before + 1)
    expect(userText(last)).toContain('The answer is 42.')
    expect((await wire.shutdown()).code).toBe(0)
  })

  it('a background child gets no approval its parent lacks: denied without asking, while the parent is asked', async () => {
    const task = 'Write two files.'
    const { wire, sessionId } = await sdkSession({ approvals: true }, { permissionPreset: 'read-only', network: 'off' })
    wire.answer = (request) => (request.method === 'approval/request' ? { decision: 'allow-once' } : undefined)
    const ended = childTurnEnd(wire, sessionId)
    route(
      task,
      async (req) => {
        const step = toolCount(req)
        if (step === 0) return background('write', 'Write child.txt.')
        if (step === 1) {
          await ended
          return call('write', { file_path: 'parent.txt', content: 'from the parent\n' })
        }
        return reply.text('Done.')
      },
      (req) =>
        toolCount(req) === 0
          ? call('write', { file_path: 'child.txt', content: 'from the child\n' })
          : reply.text('I could not write it.'),
    )
    await wire.call('session/prompt', { sessionId, content: task })
    expect(existsSync(path.join(t.work, 'child.txt'))).toBe(false)
    expect(existsSync(path.join(t.work, 'parent.txt'))).toBe(true)
    const asked = wire.received.filter((m) => m.method === 'approval/request')
    expect(asked).toHaveLength(1)
    expect(asked[0]?.params).toMatchObject({ sessionId, toolCall: { name: 'write' } })

    const child = (await ended).params.sessionId as string
    const childLog = (await wire.call('session/events', { sessionId: child })).events as RpcMessage[]
    const denied = childLog.find((e) => e.type === 'tool/result' && e.data.name === 'write')
    expect(denied?.data.error.code).toBe('DENIED')
    expect(JSON.stringify(denied?.data.error)).toContain('subagents cannot ask for approval')
    // The child runs under the parent's preset and network setting, both in its log.
    expect(childLog.find((e) => e.type === 'permission/preset')?.data.preset).toBe('read-only')
    expect(childLog.find((e) => e.type === 'permission/network')?.data.network).toBe('off')
    expect((await wire.shutdown()).code).toBe(0)
  })
})

describe('background work, headless', () => {
  it("a background bash job's end reaches the model as a notice at its next step", async () => {
    const task = 'Run the job.'
    route(
      task,
      (req) => {
        const step = toolCount(req)
        if (step === 0)
          return call('bash', { command: 'echo job-said-hi', description: 'Say hi', run_in_background: true })
        const job = toolTexts(req)[0]?.match(/job-\d+/)?.[0]
        if (step === 1) return call('job_output', { job_id: job, wait: true })
        return reply.text('The job is done.')
      },
      () => reply.text('unused'),
    )
    const result = await t.headless([task])
    expect(result.code, result.stderr).toBe(0)
    const parent = parentRequests(task)
    expect(parent).toHaveLength(3)
    const notices = parent.slice(1).flatMap(userTexts).join('\n')
    expect(notices).toMatch(/\[Background job job-\d+ \(Say hi\) ended: exited, exit code: 0\./)
    expect(userText(parent[0] as RecordedRequest)).not.toContain('Background job')
  })

  it('refuses a background subagent beyond maxConcurrentBackground, naming the limit', async () => {
    const task = 'Start two helpers.'
    const patch = path.join(t.root, 'limit.patch.yml')
    await writeFile(patch, JSON.stringify([{ id: 'subagent', config: { maxConcurrentBackground: 1 } }]))
    route(
      task,
      (req) =>
        toolCount(req) === 0
          ? reply.toolCalls([
              { name: 'subagent', arguments: { description: 'one', prompt: 'One.', run_in_background: true } },
              { name: 'subagent', arguments: { description: 'two', prompt: 'Two.', run_in_background: true } },
            ])
          : reply.text('One of them runs.'),
      () => reply.stall(1),
    )
    const run = await t.headless(['--patch', patch, task])
    expect(run.code, run.stderr).toBe(0)
    const results = toolTexts(parentRequests(task).at(-1))
    expect(results.filter((r) => r.startsWith('Started background subagent'))).toHaveLength(1)
    const refused = results.find((r) => !r.startsWith('Started background subagent'))
    expect(refused).toContain('already working, the most allowed at once (maxConcurrentBackground: 1)')
  })
})
