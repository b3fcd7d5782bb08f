import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { type AcpTestClient, chunkText, useAcpClients } from './support/acp.ts'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()
const start = useAcpClients(t)

interface Listed {
  sessions: Array<{ sessionId: string; cwd: string; title?: string; updatedAt?: string }>
  nextCursor?: string
}

const list = (client: AcpTestClient, params: Record<string, unknown> = {}) =>
  client.agent.request<Listed>('session/list', params)

/** The texts of the messages the model was sent last. */
const lastRequestTexts = () =>
  (t.mock.requests.at(-1)?.body.messages as Array<{ content: unknown }>).map((m) => m.content)

describe('dsh --profile acp: the session methods', { timeout: 90_000 }, () => {
  it('lists (by folder, page by page), titles, forks, resumes and deletes sessions', async () => {
    const other = path.join(t.root, 'other')
    mkdirSync(other)
    // One session per page, so that the cursor is exercised.
    const patch = path.join(t.root, 'small-pages.yml')
    writeFileSync(patch, '- id: acp-server\n  config:\n    listLimit: 1\n')
    t.mock.enqueue(reply.text('Noted: apples.'), reply.text('Noted: pears.'), reply.text('You said apples.'))

    const first = start({ args: ['--patch', patch] })
    const init = await first.initialize()
    expect(init.agentCapabilities?.sessionCapabilities).toEqual({
      close: {},
      list: {},
      resume: {},
      fork: {},
      title: {},
      delete: {},
    })
    const apples = (await first.newSession()).sessionId
    await first.prompt(apples, 'remember apples')
    const pears = (await first.newSession(other)).sessionId
    await first.prompt(pears, 'remember pears')

    const page1 = await list(first)
    expect(page1.sessions.map((s) => s.sessionId)).toEqual([pears])
    expect(page1.sessions[0]).toMatchObject({ cwd: other, updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) })
    expect(page1.nextCursor).toEqual(expect.any(String))
    const page2 = await list(first, { cursor: page1.nextCursor })
    expect(page2.sessions.map((s) => s.sessionId)).toEqual([apples])
    expect((await list(first, { cwd: t.work })).sessions.map((s) => s.sessionId)).toEqual([apples])

    expect(await first.agent.request('session/set_title', { sessionId: apples, title: '  Fruit  ' })).toEqual({
      title: 'Fruit',
    })
    expect((await list(first, { cwd: t.work })).sessions[0]).toMatchObject({ sessionId: apples, title: 'Fruit' })

    // The fork is a new session of this connection that carries the history.
    const fork = await first.agent.request<{ sessionId: string; modes: { currentModeId: string } }>('session/fork', {
      sessionId: apples,
      cwd: t.work,
      mcpServers: [],
    })
    expect(fork.sessionId).not.toBe(apples)
    expect(fork.modes.currentModeId).toBe('workspace-write')
    expect((await first.prompt(fork.sessionId, 'which fruit?')).stopReason).toBe('end_turn')
    expect(lastRequestTexts()).toEqual(expect.arrayContaining(['remember apples', 'Noted: apples.', 'which fruit?']))

    expect(await first.agent.request('session/delete', { sessionId: pears })).toEqual({})
    expect((await list(first, { cwd: other })).sessions).toEqual([])
    expect(existsSync(path.join(t.home, 'sessions', `${pears}.jsonl`))).toBe(false)
    expect((await first.close()).code).toBe(0)

    // A new connection resumes the stored session: no replay, and the next prompt has its history.
    t.mock.enqueue(reply.text('Still apples.'))
    const second = start()
    await second.initialize()
    // Renaming a stored session opens it for the title and closes it again: it leaves no lock behind.
    expect(await second.agent.request('session/set_title', { sessionId: apples, title: 'Fruit' })).toEqual({
      title: 'Fruit',
    })
    expect(existsSync(path.join(t.home, 'sessions', `${apples}.lock`))).toBe(false)
    const resumed = await second.agent.request<{ modes: { currentModeId: string } }>('session/resume', {
      sessionId: apples,
      cwd: t.work,
    })
    expect(resumed.modes.currentModeId).toBe('workspace-write')
    const afterResume = second.updatesOf(apples)
    expect(afterResume.map((u) => u.sessionUpdate)).toEqual(['usage_update'])
    expect((await second.prompt(apples, 'and now?')).stopReason).toBe('end_turn')
    expect(lastRequestTexts()).toEqual(expect.arrayContaining(['remember apples', 'and now?']))
    expect(chunkText(second.updatesOf(apples), 'agent_message_chunk')).toBe('Still apples.')
    expect((await second.close()).code).toBe(0)

    const log = await readSessionLog(t.home, apples)
    expect(log.events.filter((e) => e.type === 'session/title').at(-1)?.data).toMatchObject({ title: 'Fruit' })
    expect(log.events.filter((e) => e.type === 'turn/end')).toHaveLength(2)
  })

  it('answers bad parameters with -32602 naming the culprit, and unknown sessions with -32002', async () => {
    t.mock.enqueue(reply.text('Hi.'))
    const client = start()
    await client.initialize()
    const { sessionId } = await client.newSession()
    await client.prompt(sessionId, 'hello')

    await expect(list(client, { cwd: 'relative/folder' })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('cwd must be an absolute path, got "relative/folder"'),
    })
    await expect(list(client, { cursor: 'not-a-cursor' })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('cursor'),
    })
    await expect(client.agent.request('session/set_title', { sessionId, title: '   ' })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('title must be a non-empty string'),
    })
    await expect(
      client.agent.request('session/resume', { sessionId: '../../etc/passwd', cwd: t.work }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('sessionId "../../etc/passwd"') })
    await expect(
      client.agent.request('session/fork', { sessionId, cwd: 'here', mcpServers: [] }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('cwd must be an absolute path') })
    for (const method of ['session/fork', 'session/resume']) {
      await expect(
        client.agent.request(method, { sessionId: 'session-missing', cwd: t.work, mcpServers: [] }),
      ).rejects.toMatchObject({ code: -32002, message: expect.stringContaining('session-missing') })
    }
    // -32002 for an unknown session; the official client reads that as deleted, as ACP recommends.
    expect(await client.agent.request('session/delete', { sessionId: 'session-missing' })).toEqual({})
    const answer = client.transcript.findLast((entry) => entry.from === 'agent' && 'id' in (entry.message as object))
    expect(answer?.message).toMatchObject({ error: { code: -32002, data: { sessionId: 'session-missing' } } })
    await expect(
      client.agent.request('session/set_title', { sessionId: 'session-missing', title: 'x' }),
    ).rejects.toMatchObject({ code: -32002 })
    // Nothing was lost: the session still answers.
    t.mock.enqueue(reply.text('Still here.'))
    expect((await client.prompt(sessionId, 'there?')).stopReason).toBe('end_turn')
  })
})
