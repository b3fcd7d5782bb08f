import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/testkit'
import { AcpTestClient } from './support/acp.ts'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { SdkWire } from './support/sdk-wire.ts'
import { onlyStoredSession, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

async function sdk(): Promise<SdkWire> {
  const wire = new SdkWire(['--profile', 'sdk'], { home: t.home, cwd: t.work, env: t.env() })
  await wire.call('initialize', { protocolVersion: 1, clientInfo: { name: 'test' } })
  return wire
}

const file = (name: string) => path.join(t.work, name)
const read = (name: string) => readFileSync(file(name), 'utf8')

/** A workspace with an ignored file, and one turn in which `edit` changes a.txt and `bash` b.txt, c.txt and the ignored file. */
async function changedByOneTurn(wire: SdkWire): Promise<string> {
  await writeFile(file('.gitignore'), 'ignored.log\n')
  await writeFile(file('a.txt'), 'one\n')
  await writeFile(file('b.txt'), 'bee\n')
  await writeFile(file('ignored.log'), 'keep\n')
  t.mock.enqueue(
    reply.toolCalls([{ name: 'read', arguments: { file_path: 'a.txt' } }]),
    reply.toolCalls([
      { name: 'edit', arguments: { file_path: 'a.txt', old_string: 'one', new_string: 'two' } },
      {
        name: 'bash',
        arguments: {
          description: 'Change files',
          command: 'echo changed > b.txt && echo new > c.txt && echo later >> ignored.log',
        },
      },
    ]),
    reply.text('Done.'),
  )
  const { sessionId } = await wire.call('session/new', { cwd: t.work })
  const result = await wire.call('session/prompt', { sessionId, content: 'Change the files.' })
  expect(result.stopReason).toBe('completed')
  expect(read('a.txt')).toBe('two\n')
  expect(read('b.txt')).toBe('changed\n')
  expect(read('c.txt')).toBe('new\n')
  return sessionId
}

describe('rewind (session/rewind over the SDK)', () => {
  it('records a checkpoint, shows the changes in a dry run, then forks and restores edit and bash changes', async () => {
    const wire = await sdk()
    const sessionId = await changedByOneTurn(wire)
    const log = await readSessionLog(t.home, sessionId)
    const prompt = log.events.find((e) => e.type === 'user/message')?.data.message
    const checkpoint = log.events.find((e) => e.type === 'checkpoint/created')
    expect(checkpoint?.data).toMatchObject({
      turn: 1,
      messageId: prompt.id,
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
    })
    // The workspace has no .git of its own, and the shadow repository lives under the home.
    expect(existsSync(file('.git'))).toBe(false)
    expect(existsSync(path.join(t.home, 'checkpoints'))).toBe(true)

    const dry = await wire.call('session/rewind', { sessionId, to: prompt.id, restoreFiles: true, dryRun: true })
    expect(dry).toMatchObject({ messageId: prompt.id, turn: 1, restored: false, conflicts: [] })
    expect(dry.sessionId).toBeUndefined()
    expect(dry.changes).toEqual([
      { path: 'a.txt', change: 'modified' },
      { path: 'b.txt', change: 'modified' },
      { path: 'c.txt', change: 'added' },
    ])
    expect(read('a.txt')).toBe('two\n')

    const done = await wire.call('session/rewind', { sessionId, to: '1', restoreFiles: true })
    expect(done).toMatchObject({ restored: true, conflicts: [], backup: expect.stringMatching(/^[0-9a-f]{40}$/) })
    expect(done.sessionId).not.toBe(sessionId)
    expect(read('a.txt')).toBe('one\n')
    expect(read('b.txt')).toBe('bee\n')
    expect(existsSync(file('c.txt'))).toBe(false)
    expect(read('ignored.log')).toBe('keep\nlater\n')
    // The fork holds the conversation before the message: no prompt, and it was forked from the session.
    const events = (await wire.call('session/events', { sessionId: done.sessionId })).events
    expect(events.some((e: { type: string }) => e.type === 'user/message')).toBe(false)
    expect(JSON.stringify((await readSessionLog(t.home, done.sessionId)).header)).toContain(
      `"forkedFrom":"${sessionId}"`,
    )
    expect((await wire.shutdown()).code).toBe(0)
  })

  it('reports files changed outside dsh as conflicts and overwrites them only with force', async () => {
    const wire = await sdk()
    const sessionId = await changedByOneTurn(wire)
    await writeFile(file('a.txt'), 'edited by the user\n')

    const dry = await wire.call('session/rewind', { sessionId, to: '1', dryRun: true })
    expect(dry.conflicts).toEqual(['a.txt'])
    const refused = await wire.request('session/rewind', { sessionId, to: '1', restoreFiles: true })
    expect(refused.error.message).toContain('a.txt')
    expect(refused.error.message).toContain('force')
    expect(read('a.txt')).toBe('edited by the user\n')
    expect(read('b.txt')).toBe('changed\n')

    // Without files, the conversation still forks and nothing is written.
    const forkOnly = await wire.call('session/rewind', { sessionId, to: '1' })
    expect(forkOnly).toMatchObject({ restored: false, sessionId: expect.stringMatching(/^session-/) })
    expect(read('a.txt')).toBe('edited by the user\n')

    const forced = await wire.call('session/rewind', { sessionId, to: '1', restoreFiles: true, force: true })
    expect(forced.restored).toBe(true)
    expect(read('a.txt')).toBe('one\n')
    expect(read('b.txt')).toBe('bee\n')
    expect((await wire.shutdown()).code).toBe(0)
  })

  it("never uses the workspace's own .git: a hostile repository config runs nothing, its index is untouched", async () => {
    const marker = path.join(t.root, 'pwned')
    execFileSync('git', ['init', '--quiet', t.work])
    await writeFile(file('tracked.txt'), 'mine\n')
    execFileSync('git', ['-C', t.work, 'add', 'tracked.txt'])
    // What a hostile repository can ship: git runs core.fsmonitor on every status or add in it.
    const config = readFileSync(file('.git/config'), 'utf8')
    await writeFile(file('.git/config'), `${config}[core]\n\tfsmonitor = "touch ${marker}; false"\n`)
    const indexBefore = readFileSync(file('.git/index'))
    const headBefore = statSync(file('.git/HEAD')).mtimeMs
    const wire = await sdk()
    const sessionId = await changedByOneTurn(wire)
    const done = await wire.call('session/rewind', { sessionId, to: '1', restoreFiles: true })
    expect(done.restored).toBe(true)
    expect(read('a.txt')).toBe('one\n')
    // The user's repository's files are part of the snapshot like any other, its .git folder is not.
    expect(done.changes.map((c: { path: string }) => c.path)).not.toContain('.git/index')
    expect(existsSync(marker)).toBe(false)
    expect(readFileSync(file('.git/index')).equals(indexBefore)).toBe(true)
    expect(statSync(file('.git/HEAD')).mtimeMs).toBe(headBefore)
    expect((await wire.shutdown()).code).toBe(0)
  })

  it('names an unknown message and a workspace that moved', async () => {
    const wire = await sdk()
    const sessionId = await changedByOneTurn(wire)
    const unknown = await wire.request('session/rewind', { sessionId, to: 'msg-nope', dryRun: true })
    expect(unknown.error.message).toContain('no user message "msg-nope"')
    const tooFar = await wire.request('session/rewind', { sessionId, to: '2', dryRun: true })
    expect(tooFar.error.message).toContain('from 1 to 1')
    await wire.call('session/close', { sessionId })
    const moved = `${t.work}-moved`
    await mkdir(moved)
    const { rename } = await import('node:fs/promises')
    await rename(t.work, `${moved}/w`)
    const missing = await wire.request('session/rewind', { sessionId, to: '1', restoreFiles: true })
    expect(missing.error.message).toContain(`${t.work}, is missing or was moved`)
    expect((await wire.shutdown()).code).toBe(0)
  })
})

describe('dsh sessions rewind', () => {
  const sessions = (args: string[]) => runDsh(['sessions', ...args], { home: t.home, cwd: t.work, env: t.env() })

  it('shows the changes with --dry-run, then forks and restores with --restore after a headless run', async () => {
    await writeFile(file('.gitignore'), 'ignored.log\n')
    await writeFile(file('a.txt'), 'one\n')
    await writeFile(file('ignored.log'), 'keep\n')
    t.mock.enqueue(
      reply.toolCalls([{ name: 'read', arguments: { file_path: 'a.txt' } }]),
      reply.toolCalls([{ name: 'edit', arguments: { file_path: 'a.txt', old_string: 'one', new_string: 'two' } }]),
      reply.toolCalls([
        { name: 'bash', arguments: { description: 'Add', command: 'echo new > c.txt && echo x >> ignored.log' } },
      ]),
      reply.text('Done.'),
    )
    const run = await t.headless(['Change a.txt and add c.txt.'])
    expect(run.code).toBe(0)
    const id = onlyStoredSession(t.home)

    const dry = await sessions(['rewind', id, '--to', '1', '--restore', '--dry-run'])
    expect(dry.code).toBe(0)
    expect(dry.stdout).toContain('dry run: nothing changed')
    expect(dry.stdout).toContain('a.txt: modified')
    expect(dry.stdout).toContain('c.txt: added (deleted by a restore)')
    expect(dry.stdout).not.toContain('ignored.log')
    expect(read('a.txt')).toBe('two\n')

    const done = await sessions(['rewind', id, '--to', '1', '--restore', '--json'])
    expect(done.code).toBe(0)
    const report = JSON.parse(done.stdout)
    expect(report).toMatchObject({
      restored: true,
      turn: 1,
      conflicts: [],
      sessionId: expect.stringMatching(/^session-/),
    })
    expect(read('a.txt')).toBe('one\n')
    expect(existsSync(file('c.txt'))).toBe(false)
    expect(read('ignored.log')).toBe('keep\nx\n')
  })

  it('names a missing --to, an unknown session and an unknown message', async () => {
    const noTo = await sessions(['rewind', 'session-x'])
    expect(noTo.code).toBe(1)
    expect(noTo.stderr).toContain('give the message to go back to with --to')
    const unknown = await sessions(['rewind', 'session-nope', '--to', '1'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('session-nope')
    t.mock.enqueue(reply.text('Hello.'))
    expect((await t.headless(['Say hello.'])).code).toBe(0)
    const id = onlyStoredSession(t.home)
    const badMessage = await sessions(['rewind', id, '--to', 'msg-missing'])
    expect(badMessage.code).toBe(1)
    expect(badMessage.stderr).toContain('no user message "msg-missing"')
  })
})

describe('_dsh/session/rewind over ACP', () => {
  it('dry-runs, refuses an unknown message, then forks and restores the file a bash command changed', async () => {
    await writeFile(file('a.txt'), 'before\n')
    const client = new AcpTestClient({ home: t.home, cwd: t.work, env: t.env() })
    try {
      await client.initialize()
      const { sessionId } = await client.newSession()
      t.mock.enqueue(
        reply.toolCalls([{ name: 'bash', arguments: { description: 'Change', command: 'echo after > a.txt' } }]),
        reply.text('Changed.'),
      )
      // ACP's default mode asks before a command runs: allow it once.
      client.permissionAnswers.push('allow_once')
      expect((await client.prompt(sessionId, 'Change a.txt.')).stopReason).toBe('end_turn')
      expect(read('a.txt')).toBe('after\n')

      type Rewound = { sessionId?: string; changes: unknown[]; restored: boolean }
      const dry = await client.agent.request<Rewound>('_dsh/session/rewind', { sessionId, to: '1', dryRun: true })
      expect(dry).toMatchObject({ restored: false, changes: [{ path: 'a.txt', change: 'modified' }] })
      await expect(client.agent.request('_dsh/session/rewind', { sessionId, to: 'msg-nope' })).rejects.toThrow(
        'no user message "msg-nope"',
      )
      await expect(client.agent.request('_dsh/session/rewind', { sessionId })).rejects.toThrow('to')
      const done = await client.agent.request<Rewound>('_dsh/session/rewind', {
        sessionId,
        to: '1',
        restoreFiles: true,
      })
      expect(done).toMatchObject({ restored: true, sessionId: expect.stringMatching(/^session-/) })
      expect(read('a.txt')).toBe('before\n')
    } finally {
      await client.close()
    }
  })
})
