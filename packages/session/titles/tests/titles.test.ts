import type { Agent } from '@dsh/agent'
import { type Context, emitIsolated, type Fiber } from '@dsh/cordis'
import type { SessionEvent } from '@dsh/session'
import { describe, expect, it } from 'vitest'
// The spine and the mock model server, as the agent loop's own tests mount them.
import {
  type Harness,
  harnessPerTest,
  lastTurnEnd,
  ofType,
  wireMessages,
} from '../../../core/agent-loop/tests/harness.ts'
import { type MockReply, type RecordedRequest, reply } from '../../../test-support/llm-mock/src/index.ts'
import * as titles from '../src/index.ts'
import { normalizeTitle, type SessionTitlesConfig } from '../src/index.ts'

/** A harness per test; afterwards it is disposed and must have logged no warning. */
const startHarness = harnessPerTest()

const isTitleCall = (request: RecordedRequest) =>
  JSON.stringify(request.body.messages).includes('You name conversations')

interface Setup {
  h: Harness
  fiber: Fiber
  titleCalls: () => RecordedRequest[]
  /** Scripts the agent's replies; title calls get `title`. */
  script(
    agentReplies: MockReply[],
    title?: MockReply | ((request: RecordedRequest) => MockReply | Promise<MockReply>),
  ): void
}

async function setup(
  config: Partial<SessionTitlesConfig> = {},
  options: { persistence?: boolean } = {},
): Promise<Setup> {
  const h = await startHarness(options)
  const fiber = h.root.plugin(titles, config as SessionTitlesConfig)
  await fiber
  return {
    h,
    fiber,
    titleCalls: () => h.mock.requests.filter(isTitleCall),
    script(agentReplies, title = reply.text('A title')) {
      const queue = [...agentReplies]
      h.mock.setFallback(async (request) => {
        if (isTitleCall(request)) return typeof title === 'function' ? title(request) : title
        return queue.shift() ?? reply.error(500, { message: 'no agent reply scripted' })
      })
    },
  }
}

/** Resolves once `check` holds, looking again whenever the event loop has moved on. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5))
}

function titleEvents(agent: Agent): SessionEvent<'session/title'>[] {
  return ofType(agent, 'session/title')
}

describe('model titles', () => {
  it('titles a session once, from the first user message, without thinking', async () => {
    const { h, script, titleCalls } = await setup()
    script([reply.text('Hello there.'), reply.text('Again.')], reply.text('"Greeting the agent."'))
    const agent = await h.createAgent()
    agent.followup('please say hello')
    await agent.whenIdle()
    await until(() => titleEvents(agent).length > 0)

    expect(titleEvents(agent).map((e) => e.data)).toEqual([{ title: 'Greeting the agent', source: 'model' }])
    const [call] = titleCalls()
    expect(call?.body.thinking).toEqual({ type: 'disabled' })
    expect(call?.body.max_tokens).toBe(60)
    expect(call?.body.tools).toBeUndefined()
    expect(wireMessages(call).at(-1)).toEqual({ role: 'user', content: 'please say hello' })
    expect(lastTurnEnd(agent).data.reason).toBe('completed')

    agent.followup('and again')
    await agent.whenIdle()
    expect(titleCalls()).toHaveLength(1)
    expect(h.root.sessionTitles.titleOf(agent.session)).toBe('Greeting the agent')
  })

  it('a failed title call leaves the session untitled and the turn untouched', async () => {
    const { h, script } = await setup()
    script([reply.text('Answer.')], reply.error(500))
    const agent = await h.createAgent()
    agent.followup('hello')
    await agent.whenIdle()
    await until(() => h.warnings.length > 0)
    expect(h.warnings).toEqual([expect.stringMatching(/^session session-[\w-]+ stays untitled: SERVER: /)])
    h.warnings.length = 0
    expect(titleEvents(agent)).toEqual([])
    expect(lastTurnEnd(agent).data.reason).toBe('completed')
  })

  it('does not title a resumed session that already has a title', async () => {
    const { h, script, titleCalls } = await setup({}, { persistence: true })
    script([reply.text('One.'), reply.text('Two.')], reply.text('Stored title'))
    const agent = await h.createAgent()
    agent.followup('first')
    await agent.whenIdle()
    await until(() => titleEvents(agent).length > 0)
    await h.root.agents.dispose(agent)

    const { agent: resumed } = await h.root.agents.resume(agent.id)
    resumed.followup('second')
    await resumed.whenIdle()
    expect(titleCalls()).toHaveLength(1)
    expect(h.root.sessionTitles.titleOf(resumed.session)).toBe('Stored title')
    await h.root.agents.dispose(resumed)
  })

  it('leaves child sessions alone unless childSessions is on', async () => {
    const { h, script, titleCalls } = await setup()
    script([reply.text('Child answer.')])
    const parent = await h.createAgent()
    const child = await h.root.agents.create({ cwd: h.workspace, parentSession: parent.id })
    child.followup('subtask')
    await child.whenIdle()
    expect(titleCalls()).toEqual([])
  })
})

/** An agent whose first turn ended while its title call hangs; `open` counts the mock's connections then. */
async function titleInFlight() {
  const { h, script, titleCalls } = await setup()
  script([reply.text('Answer.')], reply.stall(1, reply.text('Never sent')))
  const agent = await h.createAgent()
  agent.followup('hello')
  await agent.whenIdle()
  await until(() => titleCalls().length > 0)
  return { h, agent, open: h.mock.openConnections }
}

describe('rename', () => {
  it('logs the user title, wins over a model title still in flight, and refuses a blank one', async () => {
    const { h, agent, open } = await titleInFlight()
    h.root.sessionTitles.rename(agent.session, '  My   session  ')
    await h.mock.waitForConnections(open - 1)
    expect(titleEvents(agent).map((e) => e.data)).toEqual([{ title: 'My session', source: 'user' }])
    expect(() => h.root.sessionTitles.rename(agent.session, ' \n ')).toThrow(
      /a title needs at least one visible character/,
    )
  })

  it('works with model titles turned off', async () => {
    const { h, script, titleCalls } = await setup({ enabled: false })
    script([reply.text('Answer.')])
    const agent = await h.createAgent()
    agent.followup('hello')
    await agent.whenIdle()
    expect(titleCalls()).toEqual([])
    h.root.sessionTitles.rename(agent.session, 'Chosen')
    expect(titleEvents(agent).map((e) => e.data)).toEqual([{ title: 'Chosen', source: 'user' }])
  })
})

describe('lifetime', () => {
  it('shutdown aborts a title call in flight without a warning', async () => {
    const { h, agent, open } = await titleInFlight()
    await emitIsolated(h.root as Context, 'app/shutdown')
    await h.mock.waitForConnections(open - 1)
    expect(titleEvents(agent)).toEqual([])
  })

  it('disposing the plugin removes ctx.sessionTitles, its listener and its event type', async () => {
    const { h, fiber, script, titleCalls } = await setup()
    expect(h.root.sessions.isKnownType('session/title')).toBe(true)
    await fiber.dispose()
    expect(h.root.get('sessionTitles')).toBeUndefined()
    expect(h.root.sessions.isKnownType('session/title')).toBe(false)
    script([reply.text('Answer.')])
    const agent = await h.createAgent()
    agent.followup('hello')
    await agent.whenIdle()
    expect(titleCalls()).toEqual([])
  })
})

describe('normalizeTitle', () => {
  it.each([
    ['Fix the login bug', 'Fix the login bug'],
    ['"Fix the login bug."', 'Fix the login bug'],
    ['Title: **Refactor parser**\nextra words', 'Refactor parser'],
    ['# Heading   style\n', 'Heading style'],
    ['\n\n', ''],
    ['a very long title that goes on and on beyond the limit', 'a very long title that…'],
  ])('%j -> %j', (raw, title) => {
    expect(normalizeTitle(raw, 24)).toBe(title)
  })
})
