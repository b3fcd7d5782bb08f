import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import type { SessionEvent } from '@dsh/session'
import * as jsonl from '@dsh/session-persistence-jsonl'
import { textMessage } from '@dsh/session'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { sessionsCommand } from '../src/command.ts'
import { meta, reply, storedTurn, userMessage } from './helpers.ts'

let home: string
beforeEach(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'dsh-sessions-cli-'))
})
afterEach(() => rm(home, { recursive: true, force: true }))

async function run(...args: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await sessionsCommand({
    args,
    home,
    cwd: '/work',
    writeOut: (t) => void (stdout += t),
    writeErr: (t) => void (stderr += t),
  })
  return { code, stdout, stderr }
}

/** Writes logs the way the JSONL provider does, then seals one of them. */
async function store(logs: Array<{ id: string; cwd?: string; events: SessionEvent[]; seal?: boolean }>): Promise<void> {
  const root = new Context()
  await root.plugin(jsonl, { root: path.join(home, 'sessions') })
  for (const log of logs) {
    await root.sessionPersistence.append(
      meta(log.id, { cwd: log.cwd ?? '/work/a', createdAt: log.events[0]?.time ?? 0 }),
      log.events,
    )
    if (log.seal) await root.sessionPersistence.seal(log.id as never)
  }
  await root.fiber.dispose()
}

function toolTurn(): SessionEvent[] {
  const call = {
    type: 'tool-call' as const,
    id: 'call_1' as never,
    name: 'read',
    arguments: '{"file_path":"notes.txt"}',
  }
  const assistant = {
    ...reply(1, 'Let me look.'),
    message: { ...textMessage('assistant', 'Let me look.', { kind: 'model', provider: 'p', model: 'm' }) },
  }
  assistant.message.content = [...assistant.message.content, call]
  const events = [
    { type: 'turn/start', data: { turn: 1 } },
    { type: 'user/message', data: userMessage('What is in the `notes`?') },
    { type: 'assistant/message', data: assistant },
    { type: 'tool/call', data: { turn: 1, step: 1, callId: 'call_1', name: 'read', arguments: call.arguments } },
    {
      type: 'tool/result',
      data: {
        turn: 1,
        step: 1,
        callId: 'call_1',
        name: 'read',
        message: textMessage('user', 'no', { kind: 'tool', name: 'read' }),
        error: { code: 'NOT_FOUND', message: 'notes.txt does not exist' },
      },
    },
    { type: 'assistant/message', data: reply(1, 'There are no notes.') },
    { type: 'turn/end', data: { turn: 1, reason: 'completed' } },
  ]
  return events.map((event, seq) => ({ ...event, seq, time: 5000 + seq }) as SessionEvent)
}

describe('dsh sessions (command module)', () => {
  it('builds the catalog on first use, then lists and searches', async () => {
    await store([
      { id: 'older', events: storedTurn(0, 1000, 'how do penguins swim', 'with wings'), seal: true },
      { id: 'newer', cwd: '/work/b', events: storedTurn(0, 2000, 'what do koalas eat', 'eucalyptus leaves') },
    ])
    const list = await run('list')
    expect(list).toMatchObject({ code: 0, stderr: '' })
    expect(
      list.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split('  ')[1]),
    ).toEqual(['newer', 'older'])
    expect(existsSync(path.join(home, 'catalog.sqlite'))).toBe(true)
    expect(statSync(path.join(home, 'catalog.sqlite')).mode & 0o777).toBe(0o600)

    const json = JSON.parse((await run('list', '--json', '--cwd', 'b')).stdout)
    expect(json.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(['newer'])
    const paged = JSON.parse((await run('list', '--json', '--limit', '1')).stdout)
    expect(paged.nextCursor).toEqual(expect.any(String))
    const rest = JSON.parse((await run('list', '--json', '--cursor', paged.nextCursor)).stdout)
    expect(rest.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(['older'])

    const search = await run('search', 'penguins')
    expect(search.code).toBe(0)
    expect(search.stdout).toContain('older')
    expect(search.stdout).toContain('«penguins»')
    expect(search.stdout).not.toContain('newer')
    expect(JSON.parse((await run('search', 'eucalyptus', '--json')).stdout)).toEqual([
      expect.objectContaining({ sessionId: 'newer', snippet: expect.stringContaining('«eucalyptus»') }),
    ])
    expect(await run('search', 'walrus')).toMatchObject({
      code: 0,
      stdout: '',
      stderr: 'dsh: no session matches "walrus"\n',
    })
  })

  it('shows a session: facts, prompts, answers and tool calls one line each', async () => {
    await store([{ id: 'tooly', events: toolTurn() }])
    const { code, stdout } = await run('show', 'tooly')
    expect(code).toBe(0)
    expect(stdout).toMatch(/^session {2}tooly\n/)
    expect(stdout).toContain('messages 1 from the user, 2 from the model')
    expect(stdout).toContain('What is in the `notes`?')
    expect(stdout).toContain('  > read {"file_path":"notes.txt"}  [failed: notes.txt does not exist]')
    expect(stdout).toContain('There are no notes.')
  })

  it('exports the raw log or markdown, to stdout or a private file', async () => {
    await store([{ id: 'tooly', events: toolTurn(), seal: true }])
    const raw = await run('export', 'tooly')
    expect(raw.stdout.split('\n')[0]).toContain('"type":"session"')
    expect(raw.stdout.trim().split('\n')).toHaveLength(8)
    const md = await run('export', 'tooly', '--format', 'markdown')
    expect(md.stdout).toMatch(/^# Session tooly\n/)
    expect(md.stdout).toContain('## User\n\nWhat is in the `notes`?')
    expect(md.stdout).toContain('- Tool `read` `{"file_path":"notes.txt"}` failed: notes.txt does not exist')
    const file = path.join(home, 'out.md')
    const written = await run('export', 'tooly', '--format=markdown', '-o', file)
    expect(written).toMatchObject({ code: 0, stdout: '', stderr: `dsh: wrote ${file}\n` })
    expect(readFileSync(file, 'utf8')).toBe(md.stdout)
    expect(statSync(file).mode & 0o777).toBe(0o600)
  })

  it('deletes sessions with their subagent sessions, and refuses one another dsh has open', async () => {
    await store([
      { id: 'parent', events: storedTurn(0, 1000, 'plan the work', 'delegated'), seal: true },
      { id: 'other', events: storedTurn(0, 2000, 'something else', 'kept') },
    ])
    const root = new Context()
    await root.plugin(jsonl, { root: path.join(home, 'sessions') })
    await root.sessionPersistence.append(
      meta('child', { parentSession: 'parent' as never }),
      storedTurn(0, 1500, 'do a part', 'done'),
    )
    await root.sessionPersistence.append(
      meta('grandchild', { parentSession: 'child' as never }),
      storedTurn(0, 1600, 'a smaller part', 'done'),
    )
    await root.fiber.dispose()

    const deleted = await run('delete', 'parent')
    expect(deleted).toEqual({ code: 0, stdout: 'deleted parent and its 2 subagent sessions\n', stderr: '' })
    expect(readdirSync(path.join(home, 'sessions')).sort()).toEqual(['other.jsonl'])
    expect((await run('list', '--all')).stdout).toContain('other')
    expect((await run('list', '--all')).stdout).not.toMatch(/parent|child/)

    // Another live dsh process holds "other" (a sleeping child stands in for it).
    const holder = spawn('sleep', ['30'], { stdio: 'ignore' })
    await new Promise((resolve) => holder.once('spawn', resolve))
    const lease = path.join(home, 'sessions', 'other.lock')
    await writeFile(lease, JSON.stringify({ pid: holder.pid, host: os.hostname(), since: 1_700_000_000_000 }))
    try {
      expect((await run('list')).stdout).toMatch(new RegExp(`  other  .* · open in process ${holder.pid}\n$`))
      const listed = JSON.parse((await run('list', '--json')).stdout)
      expect(listed.sessions[0].openIn).toEqual({ pid: holder.pid, host: os.hostname(), since: 1_700_000_000_000 })
      expect((await run('show', 'other')).stdout).toContain(
        `\nopen     in process ${holder.pid} on ${os.hostname()}, since `,
      )
      const refused = await run('delete', 'other')
      expect(refused.code).toBe(1)
      expect(refused.stderr).toBe(
        `dsh: session other is open in another dsh (process ${holder.pid} on ${os.hostname()}, since 2023-11-14T22:13:20.000Z); finish or close it there first (if that process is gone, remove ${lease})\n`,
      )
      expect(existsSync(path.join(home, 'sessions', 'other.jsonl'))).toBe(true)
    } finally {
      holder.kill()
    }
  })

  it('reindexes, reporting a log it cannot read', async () => {
    await store([{ id: 'one', events: storedTurn(0, 1000, 'alpha', 'beta') }])
    await writeFile(
      path.join(home, 'sessions', 'bad.jsonl'),
      '{"type":"session","format":99,"id":"bad","createdAt":1,"cwd":"/"}\n',
    )
    const result = await run('reindex')
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^indexed 1 session\(s\) in \d+ ms\n$/)
    expect(result.stderr).toMatch(/dsh: skipping session bad .*written by a newer dsh/)
  })

  it.each([
    [[], /^dsh: sessions needs a command: list, search, show, export, delete, rewind, reindex\n/],
    [
      ['frobnicate'],
      /^dsh: unknown sessions command "frobnicate" \(use list, search, show, export, delete, rewind, reindex\)\n$/,
    ],
    [['list', '--limit', 'ten'], /^dsh: sessions list: --limit needs a whole number from 1 to 1000, got "ten"\n$/],
    [['list', '--bogus'], /^dsh: sessions list: Unknown option '--bogus'\n$/],
    [['list', 'extra'], /^dsh: sessions list: unexpected argument "extra"\n$/],
    [['list', '--cursor', 'zzz'], /^dsh: invalid cursor "zzz"/],
    [['search'], /^dsh: sessions search: give the words to search for\n$/],
    [['show'], /^dsh: sessions show: give a session id/],
    [['show', 'nobody'], /^dsh: no session nobody under /],
    [['show', '../etc'], /^dsh: invalid session id "..\/etc"/],
    [
      ['export', 'nobody', '--format', 'pdf'],
      /^dsh: sessions export: --format must be jsonl or markdown, got "pdf"\n$/,
    ],
    [['export', 'nobody'], /^dsh: no session nobody under /],
    [['delete'], /^dsh: sessions delete: give the ids of the sessions to delete \(see dsh sessions list\)\n$/],
    [['delete', 'nobody'], /^dsh: no session nobody under /],
  ])('fails with exit 1 naming the culprit: %j', async (args, message) => {
    const result = await run(...args)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toMatch(message)
  })

  it('prints its help', async () => {
    const result = await run('--help')
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('Usage: dsh sessions <command>')
  })
})
