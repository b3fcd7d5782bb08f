import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/testkit'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { SdkWire } from './support/sdk-wire.ts'
import { readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

const systemOf = (request: number): string => {
  const message = t.mock.requests[request]?.body.messages[0]
  expect(message?.role).toBe('system')
  return message.content as string
}

function git(cwd: string, ...args: string[]) {
  const result = spawnSync('git', args, { cwd, encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${result.stderr}`)
}

async function repo(folder: string) {
  await mkdir(folder, { recursive: true })
  git(folder, 'init', '-q', '-b', 'trunk')
  git(folder, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'start')
}

describe('the system prompt', () => {
  it('stays byte-identical across the steps and turns of a session; an edited AGENTS.md changes it and is logged', async () => {
    await repo(t.work)
    await writeFile(path.join(t.work, 'AGENTS.md'), 'RULES-ONE')
    t.mock.enqueue(
      reply.toolCalls([{ name: 'bash', arguments: { description: 'Change the tree', command: 'echo x > new.txt' } }]),
      reply.text('Step two.'),
      reply.text('Turn two.'),
      reply.text('Turn three.'),
    )
    const wire = new SdkWire(['--profile', 'sdk'], { home: t.home, cwd: t.work, env: t.env() })
    await wire.call('initialize', { protocolVersion: 1 })
    const { sessionId } = await wire.call('session/new', { cwd: t.work })
    expect(await wire.call('session/prompt', { sessionId, content: 'first' })).toMatchObject({ steps: 2 })
    // The tree changed (new.txt), yet the prompt keeps the status the session started with.
    await wire.call('session/prompt', { sessionId, content: 'second' })
    await writeFile(path.join(t.work, 'AGENTS.md'), 'RULES-TWO')
    await wire.call('session/prompt', { sessionId, content: 'third' })
    expect((await wire.shutdown()).code).toBe(0)

    expect(t.mock.requests).toHaveLength(4)
    const first = systemOf(0)
    expect(first).toContain('- Git branch: trunk')
    expect(first).toContain('- Git status when the session started: 1 changed or untracked\n  - ?? "AGENTS.md"')
    expect(first).toContain('RULES-ONE')
    expect(systemOf(1)).toBe(first)
    expect(systemOf(2)).toBe(first)
    expect(systemOf(3)).toBe(first.replace('RULES-ONE', 'RULES-TWO'))

    const { events } = await readSessionLog(t.home, sessionId)
    const changed = events.filter((e) => e.type === 'system/prompt-changed')
    expect(changed.map((e) => e.data)).toEqual([
      { changes: [{ section: 'context:instructions', reason: 'instructions changed' }] },
    ])
    const systems = events.filter((e) => e.type === 'system/message')
    expect(systems).toHaveLength(2)
    // The change is logged right before the new system message, in the third turn.
    expect(events.indexOf(changed[0] as (typeof events)[number]) + 1).toBe(
      events.indexOf(systems[1] as (typeof events)[number]),
    )
  })

  it('puts what every session shares first: sessions in two folders share all up to the environment section', async () => {
    const folders = [path.join(t.root, 'alpha-project'), path.join(t.root, 'beta-project')]
    t.mock.enqueue(reply.text('One.'), reply.text('Two.'))
    for (const cwd of folders) {
      await mkdir(cwd)
      const result = await runDsh(['--profile', 'headless', 'hello'], { home: t.home, cwd, env: t.env() })
      expect(result.code).toBe(0)
    }
    const [a, b] = [systemOf(0), systemOf(1)]
    const firstSentence = a.slice(0, a.indexOf('.') + 1)
    expect(firstSentence).toBe('You are dsh, an AI coding agent.')
    let shared = 0
    while (shared < a.length && a[shared] === b[shared]) shared++
    const environment = a.indexOf('# Environment')
    expect(environment).toBeGreaterThan(0)
    // Everything before the environment section is common; the folders differ only after it.
    expect(shared).toBeGreaterThanOrEqual(environment)
    expect(a.slice(environment)).toContain(`- Workspace: ${folders[0]} `)
    expect(b.slice(environment)).toContain(`- Workspace: ${folders[1]} `)
    expect(a.slice(0, environment)).not.toContain(t.root)
    expect(a).toContain('- Git: not a repository')
    expect(a).toMatch(/- Date: \d{4}-\d{2}-\d{2} \(time zone [^)]+\)/)
  })

  it('starts no git process outside a repository, and reads the branch in a folder below one', async () => {
    const realGit = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim()
    const spyDir = path.join(t.root, 'spy-bin')
    const calls = path.join(t.root, 'git-calls')
    await mkdir(spyDir)
    await writeFile(path.join(spyDir, 'git'), `#!/bin/sh\necho "$*" >> ${calls}\nexec ${realGit} "$@"\n`)
    await chmod(path.join(spyDir, 'git'), 0o755)
    const env = { ...t.env(), PATH: `${spyDir}:${process.env.PATH}` }
    const plain = path.join(t.root, 'not-a-repo')
    const nested = path.join(t.work, 'src', 'deep')
    await mkdir(plain)
    await repo(t.work)
    await mkdir(nested, { recursive: true })
    t.mock.enqueue(reply.text('One.'), reply.text('Two.'))

    expect((await runDsh(['--profile', 'headless', 'hello'], { home: t.home, cwd: plain, env })).code).toBe(0)
    expect(systemOf(0)).toContain('- Git: not a repository')
    expect(existsSync(calls)).toBe(false)

    expect((await runDsh(['--profile', 'headless', 'hello'], { home: t.home, cwd: nested, env })).code).toBe(0)
    expect(systemOf(1)).toContain('- Git branch: trunk')
    expect(existsSync(calls)).toBe(true)
  })

  it('keeps the whole first request with the full tool set under 24 KB', async () => {
    await repo(t.work)
    t.mock.enqueue(reply.text('Hi.'))
    const result = await t.headless(['hello'])
    expect(result.code).toBe(0)
    const body = t.mock.requests[0]?.body
    expect(body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual(
      expect.arrayContaining(['read', 'write', 'edit', 'glob', 'grep', 'bash', 'todo_write', 'web_fetch']),
    )
    expect(body.tools.length).toBeGreaterThanOrEqual(15)
    expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThan(24 * 1024)
  })
})

describe('git in the environment section, against a hostile repository', () => {
  it("runs none of the repository's fsmonitor, filter or hook commands, and still shows the branch and status", async () => {
    await repo(t.work)
    const marker = path.join(t.root, 'pwned')
    const payload = path.join(t.root, 'payload.sh')
    await writeFile(payload, `#!/bin/sh\necho "$0 $*" >> ${marker}\ncat\n`)
    await chmod(payload, 0o755)
    git(t.work, 'config', 'core.fsmonitor', payload)
    git(t.work, 'config', 'filter.evil.clean', payload)
    git(t.work, 'config', 'filter.evil.smudge', payload)
    git(t.work, 'config', 'filter.a=b.clean', payload)
    git(t.work, 'config', 'filter.a=b.required', 'true')
    await writeFile(path.join(t.work, '.gitattributes'), '*.txt filter=evil\n*.md filter=a=b\n')
    await mkdir(path.join(t.work, '.git', 'hooks'), { recursive: true })
    await writeFile(path.join(t.work, '.git', 'hooks', 'post-index-change'), `#!/bin/sh\n${payload}\n`)
    await chmod(path.join(t.work, '.git', 'hooks', 'post-index-change'), 0o755)
    // Tracked files whose stat no longer matches the index, so a status would run the clean filter.
    await writeFile(path.join(t.work, 'a.txt'), 'one\n')
    await writeFile(path.join(t.work, 'b.md'), 'one\n')
    spawnSync('git', ['-c', 'core.fsmonitor=false', 'add', '.'], {
      cwd: t.work,
      env: { ...process.env, GIT_CONFIG_COUNT: '0' },
    })
    spawnSync('rm', ['-f', marker])
    await writeFile(path.join(t.work, 'a.txt'), 'two\n')
    await writeFile(path.join(t.work, 'b.md'), 'two\n')
    await writeFile(path.join(t.work, 'line\nbreak\n# Injected heading'), '')

    t.mock.enqueue(reply.text('Hi.'))
    const result = await t.headless(['hello'])
    expect(result.code).toBe(0)
    expect(existsSync(marker)).toBe(false)
    const system = systemOf(0)
    expect(system).toContain('- Git branch: trunk')
    expect(system).toMatch(/Git status when the session started: \d+ changed or untracked/)
    expect(system).toContain('"a.txt"')
    expect(system).not.toMatch(/^# Injected heading/m)
  })
})
