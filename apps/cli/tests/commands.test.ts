import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { type RecordedRequest, reply } from '@dsh/llm-mock'
import { afterEach, describe, expect, it } from 'vitest'
import { AcpTestClient } from './support/acp.ts'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { SdkWire } from './support/sdk-wire.ts'
import { onlyStoredSession, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()
let closers: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const close of closers) await close()
  closers = []
})

const REVIEW =
  '---\ndescription: Review a pull request\nargument-hint: <number>\n---\nReview pull request $1 ($ARGUMENTS).\n'

function write(relative: string, text: string, root = t.work): string {
  const file = path.join(root, relative)
  mkdirSync(path.dirname(file), { recursive: true })
  writeFileSync(file, text)
  return file
}

/** The text of the last user message a model request carried. */
function lastUserText(request: RecordedRequest | undefined): string {
  const users = (request?.body.messages ?? []).filter((m: { role: string }) => m.role === 'user')
  const last = users.at(-1)?.content
  return typeof last === 'string' ? last : JSON.stringify(last)
}

/** The model requests of the agent (title requests carry no tools). */
const agentRequests = () => t.mock.requests.filter((r) => r.body?.tools?.length)

describe('commands: prompt files and skills called as /name args', { timeout: 60_000 }, () => {
  it('headless: a .claude/commands file is expanded with its arguments; the log keeps what was typed', async () => {
    write('.claude/commands/review.md', REVIEW)
    t.mock.enqueue(reply.text('Reviewed.'))
    const result = await t.headless(['/review 42 --strict'])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(lastUserText(agentRequests()[0])).toBe('Review pull request 42 (42 --strict).')
    const { events } = await readSessionLog(t.home, onlyStoredSession(t.home))
    const user = events.find((e) => e.type === 'user/message')
    expect(user?.data.message.source).toEqual({ kind: 'user', command: { name: 'review', args: '42 --strict' } })
  })

  it('headless: a skill is callable by name, home commands too, and text that only looks like one is sent as written', async () => {
    write(
      '.dsh/skills/deploy/SKILL.md',
      '---\nname: deploy\ndescription: Deploy the app\n---\nRun ./ship.sh with the target.\n',
    )
    write('commands/standup.md', 'Write my standup notes from the git log.\n', t.home)
    t.mock.enqueue(reply.text('Deploying.'), reply.text('Notes.'), reply.text('Checked.'))
    expect((await t.headless(['/deploy staging'])).code).toBe(0)
    expect(lastUserText(agentRequests()[0])).toMatch(
      /<skill name="deploy"[\s\S]*Run \.\/ship\.sh with the target\.[\s\S]*Apply the skill to: staging/,
    )
    expect((await t.headless(['/standup', 'briefly'])).code).toBe(0)
    expect(lastUserText(agentRequests()[1])).toBe('Write my standup notes from the git log.\n\nARGUMENTS: briefly')
    expect((await t.headless(['/etc/hosts looks wrong'])).code).toBe(0)
    expect(lastUserText(agentRequests()[2])).toBe('/etc/hosts looks wrong')
  })

  it('attack: a command file planted as a symlink to a file outside the project is never read; the line goes as typed', async () => {
    const secret = write('private-notes.txt', 'bank pin never-leaves-this-file-1234\n', t.root)
    mkdirSync(path.join(t.work, '.claude/commands'), { recursive: true })
    symlinkSync(secret, path.join(t.work, '.claude/commands/review.md'))
    t.mock.enqueue(reply.text('Nothing to review.'))
    const result = await t.headless(['/review 1'])
    expect(result.code).toBe(0)
    expect(JSON.stringify(t.mock.requests)).not.toContain('never-leaves-this-file')
    expect(lastUserText(agentRequests()[0])).toBe('/review 1')
  })

  it('SDK: session/commands lists the workspace commands, and a prompt calling one is expanded', async () => {
    write('.claude/commands/review.md', REVIEW)
    write('.dsh/skills/deploy/SKILL.md', '---\nname: deploy\ndescription: Deploy the app\n---\nShip it.\n')
    const wire = new SdkWire(['--profile', 'sdk'], { home: t.home, cwd: t.work, env: t.env() })
    closers.push(() => wire.shutdown())
    await wire.call('initialize', { protocolVersion: 1 })
    const { sessionId } = await wire.call('session/new', { cwd: t.work })
    const { commands } = await wire.call('session/commands', { sessionId })
    expect(commands).toEqual([
      { name: 'deploy', description: 'Deploy the app', scope: 'skill' },
      { name: 'review', description: 'Review a pull request', argumentHint: '<number>', scope: 'project' },
    ])
    t.mock.enqueue(reply.text('Looked at it.'))
    const result = await wire.call('session/prompt', { sessionId, content: '/review 7' })
    expect(result).toMatchObject({ stopReason: 'completed', text: 'Looked at it.' })
    expect(lastUserText(agentRequests()[0])).toBe('Review pull request 7 (7).')
    const error = await wire.request('session/commands', { sessionId: 'session-missing' })
    expect(error.error?.message).toMatch(/session-missing/)
  })

  it('ACP: available_commands_update follows session/new, and a prompt calling a command is expanded', async () => {
    write('.claude/commands/review.md', REVIEW)
    const client = new AcpTestClient({ home: t.home, cwd: t.work, env: t.env() })
    closers.push(() => client.close())
    await client.initialize()
    const { sessionId } = await client.newSession()
    t.mock.enqueue(reply.text('Done reviewing.'))
    await client.prompt(sessionId, '/review 9')
    const update = client.updatesOf(sessionId).find((u) => u.sessionUpdate === 'available_commands_update')
    expect(update).toEqual({
      sessionUpdate: 'available_commands_update',
      availableCommands: [{ name: 'review', description: 'Review a pull request', input: { hint: '<number>' } }],
    })
    expect(lastUserText(agentRequests()[0])).toBe('Review pull request 9 (9).')
  })
})
