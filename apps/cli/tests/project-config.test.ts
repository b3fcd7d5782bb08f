import { existsSync, readFileSync, statSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type RecordedRequest, reply } from '@dsh/llm-mock'
import { repoRoot, runDsh } from '@dsh/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { SdkWire } from './support/sdk-wire.ts'

const t = useMockedHeadless()

afterEach(() => t.mock.setFallback(undefined))

const fixture = path.join(repoRoot, 'packages/mcp/mcp/tests/fixtures/server.mjs')
const toolNames = (req: RecordedRequest | undefined) =>
  ((req?.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((tool) => tool.function.name)

/** A `.mcp.json` whose one server records each start in `starts` (outside the workspace). */
async function projectMcp(name: string, starts: string, folder = t.work): Promise<void> {
  await writeFile(
    path.join(folder, '.mcp.json'),
    JSON.stringify({ mcpServers: { [name]: { command: process.execPath, args: [fixture, '--starts', starts] } } }),
  )
}

describe('workspace trust and the project .mcp.json', () => {
  it('a cloned repository with a .mcp.json starts nothing when opened headless: the folder is not trusted', async () => {
    const starts = path.join(t.root, 'starts.txt')
    await mkdir(path.join(t.work, '.git'))
    await projectMcp('evil', starts)
    t.mock.enqueue(reply.text('Opened.'))
    const result = await t.headless(['hello'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Opened.\n')
    expect(existsSync(starts)).toBe(false)
    expect(toolNames(t.mock.requests[0])).not.toContain('mcp__evil__add')
    expect(result.stderr).toContain('were not started: the folder')
    expect(result.stderr).toContain('--trust-workspace')
    expect(existsSync(path.join(t.home, 'trusted-folders.json'))).toBe(false)
  })

  it('--trust-workspace starts its servers for that run only, and their tools reach the model', async () => {
    const starts = path.join(t.root, 'starts.txt')
    await projectMcp('proj', starts)
    t.mock.enqueue(reply.text('Ready.'))
    const result = await t.headless(['--trust-workspace', 'hello'])
    expect(result.code).toBe(0)
    expect(readFileSync(starts, 'utf8').trim().split('\n')).toHaveLength(1)
    expect(toolNames(t.mock.requests[0])).toContain('mcp__proj__add')
    // Not remembered: the next run without the flag starts nothing.
    t.mock.enqueue(reply.text('Again.'))
    const again = await t.headless(['hello'])
    expect(again.code).toBe(0)
    expect(readFileSync(starts, 'utf8').trim().split('\n')).toHaveLength(1)
    expect(toolNames(t.mock.requests[1])).not.toContain('mcp__proj__add')
  })

  it('a folder remembered as trusted in $DSH_HOME (or a folder above it) starts its servers', async () => {
    const starts = path.join(t.root, 'starts.txt')
    const sub = path.join(t.work, 'sub')
    await mkdir(sub)
    await projectMcp('proj', starts, sub)
    await mkdir(t.home, { recursive: true })
    await writeFile(path.join(t.home, 'trusted-folders.json'), JSON.stringify({ version: 1, folders: [t.work] }))
    t.mock.enqueue(reply.text('Ready.'))
    const result = await runDsh(['--profile', 'headless', 'hello'], { home: t.home, cwd: sub, env: t.env() })
    expect(result.code).toBe(0)
    expect(existsSync(starts)).toBe(true)
    expect(toolNames(t.mock.requests[0])).toContain('mcp__proj__add')
  })

  it('the .mcp.json can be switched off on the mcp-config-files row', async () => {
    const starts = path.join(t.root, 'starts.txt')
    await projectMcp('proj', starts)
    const patch = path.join(t.root, 'off.yml')
    await writeFile(patch, JSON.stringify([{ id: 'mcp-config-files', config: { projectFile: '' } }]))
    t.mock.enqueue(reply.text('Ready.'))
    const result = await t.headless(['--patch', patch, '--trust-workspace', 'hello'])
    expect(result.code).toBe(0)
    expect(existsSync(starts)).toBe(false)
    expect(result.stderr).toBe('')
  })

  it('--mcp-config starts the servers of the named file without asking, ${VAR} filled from the environment', async () => {
    const starts = path.join(t.root, 'given-starts.txt')
    const file = path.join(t.root, 'servers.json')
    await writeFile(
      file,
      JSON.stringify({
        mcpServers: { given: { type: 'stdio', command: process.execPath, args: [fixture, '--starts', '${STARTS}'] } },
      }),
    )
    t.mock.setFallback((req) =>
      req.body.messages.some((m: { role: string }) => m.role === 'tool')
        ? reply.text('Done.')
        : reply.toolCalls([{ name: 'mcp__given__add', arguments: { a: 2, b: 3 } }]),
    )
    const result = await t.headless(['--mcp-config', file, '--permission', 'danger-full-access', 'add'], {
      STARTS: starts,
    })
    expect(result.code).toBe(0)
    expect(existsSync(starts)).toBe(true)
    const second = t.mock.requests[1]?.body.messages.filter((m: { role: string }) => m.role === 'tool')
    expect(second?.[0]?.content).toBe('5')
  })

  it('a malformed project .mcp.json is reported and skipped; the run goes on', async () => {
    await writeFile(path.join(t.work, '.mcp.json'), '{"mcpServers": ')
    t.mock.enqueue(reply.text('Still here.'))
    const result = await t.headless(['--trust-workspace', 'hello'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Still here.\n')
    expect(result.stderr).toContain(`${path.join(t.work, '.mcp.json')} is not readable JSON`)
  })

  it('a malformed --mcp-config file fails the run, naming the file and the server', async () => {
    const file = path.join(t.root, 'bad.json')
    await writeFile(file, JSON.stringify({ mcpServers: { 'bad name!': { command: 'x' } } }))
    const result = await t.headless(['--mcp-config', file, 'hello'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(file)
    expect(result.stderr).toContain('bad name!')
  })

  /** An SDK client that answers every question with `choice`, after it opened a session and prompted it once. */
  async function promptAnswering(choice: string) {
    const wire = new SdkWire(['--profile', 'sdk'], { home: t.home, cwd: t.work, env: t.env() })
    await wire.call('initialize', {
      protocolVersion: 1,
      clientInfo: { name: 'test' },
      capabilities: { questions: true },
    })
    wire.answer = (request) =>
      request.method === 'question/ask'
        ? { answers: [{ question: request.params.questions[0].question, selected: [choice] }] }
        : undefined
    const { sessionId } = await wire.call('session/new', { cwd: t.work })
    await wire.call('session/prompt', { sessionId, content: 'hello' })
    return { wire, sessionId }
  }

  it('an SDK client that answers questions is asked once; a yes starts the servers and is remembered (0600)', async () => {
    const starts = path.join(t.root, 'starts.txt')
    await mkdir(path.join(t.work, '.git'))
    await projectMcp('proj', starts)
    t.mock.setFallback(() => reply.text('Ready.'))
    const open = async () => (await promptAnswering('Trust this folder')).wire
    const first = await open()
    const asked = first.received.filter((m) => m.method === 'question/ask')
    expect(asked).toHaveLength(1)
    expect(asked[0]?.params.questions[0].question).toContain(t.work)
    expect(asked[0]?.params.questions[0].question).toContain('.mcp.json')
    expect(existsSync(starts)).toBe(true)
    expect(toolNames(t.mock.requests.at(-1))).toContain('mcp__proj__add')
    expect((await first.shutdown()).code).toBe(0)
    const file = path.join(t.home, 'trusted-folders.json')
    expect(JSON.parse(readFileSync(file, 'utf8')).folders).toEqual([t.work])
    expect(statSync(file).mode & 0o777).toBe(0o600)

    const second = await open()
    expect(second.received.some((m) => m.method === 'question/ask')).toBe(false)
    expect(readFileSync(starts, 'utf8').trim().split('\n')).toHaveLength(2)
    expect((await second.shutdown()).code).toBe(0)
  })

  it('an SDK client that says no: nothing starts and nothing is remembered', async () => {
    const starts = path.join(t.root, 'starts.txt')
    await projectMcp('proj', starts)
    t.mock.setFallback(() => reply.text('Ready.'))
    const { wire, sessionId } = await promptAnswering('Do not trust it')
    await wire.call('session/prompt', { sessionId, content: 'again' })
    expect(wire.received.filter((m) => m.method === 'question/ask')).toHaveLength(1)
    expect(existsSync(starts)).toBe(false)
    expect(existsSync(path.join(t.home, 'trusted-folders.json'))).toBe(false)
    expect((await wire.shutdown()).code).toBe(0)
  })
})

describe('instructions and skills users already keep', () => {
  const systemOf = (request = 0): string => String(t.mock.requests[request]?.body.messages[0]?.content ?? '')

  async function files(entries: Record<string, string>, base = t.work) {
    for (const [name, content] of Object.entries(entries)) {
      await mkdir(path.dirname(path.join(base, name)), { recursive: true })
      await writeFile(path.join(base, name), content)
    }
  }

  it('reads CLAUDE.md in a folder without AGENTS.md, and only AGENTS.md where both exist', async () => {
    const sub = path.join(t.work, 'pkg')
    await files({
      '.git/HEAD': 'ref: refs/heads/main\n',
      'CLAUDE.md': 'ROOT-CLAUDE-MARKER',
      'pkg/AGENTS.md': 'PKG-AGENTS-MARKER',
      'pkg/CLAUDE.md': 'PKG-CLAUDE-MARKER',
    })
    t.mock.enqueue(reply.text('Noted.'))
    const result = await runDsh(['--profile', 'headless', 'hello'], { home: t.home, cwd: sub, env: t.env() })
    expect(result.code).toBe(0)
    const system = systemOf()
    expect(system).toContain('ROOT-CLAUDE-MARKER')
    expect(system).toContain('PKG-AGENTS-MARKER')
    expect(system).not.toContain('PKG-CLAUDE-MARKER')
  })

  it('CLAUDE.md is not read once fallbackFileNames is emptied', async () => {
    await files({ 'CLAUDE.md': 'ROOT-CLAUDE-MARKER' })
    const patch = path.join(t.root, 'no-claude.yml')
    await writeFile(patch, JSON.stringify([{ id: 'instructions', config: { fallbackFileNames: [] } }]))
    t.mock.enqueue(reply.text('Noted.'))
    expect((await t.headless(['--patch', patch, 'hello'])).code).toBe(0)
    expect(systemOf()).not.toContain('ROOT-CLAUDE-MARKER')
  })

  it('lists skills from .claude/skills, .agents/skills and ~/.agents/skills', async () => {
    const home = path.join(t.root, 'user-home')
    const skill = (name: string) => `---\nname: ${name}\ndescription: The ${name} skill.\n---\nDo ${name}.\n`
    await files({
      '.git/HEAD': 'ref: refs/heads/main\n',
      '.claude/skills/claude-one/SKILL.md': skill('claude-one'),
      '.agents/skills/agents-one/SKILL.md': skill('agents-one'),
    })
    await files({ '.agents/skills/home-one/SKILL.md': skill('home-one') }, home)
    t.mock.enqueue(reply.text('Noted.'))
    expect((await t.headless(['hello'], { HOME: home })).code).toBe(0)
    const system = systemOf()
    for (const name of ['claude-one', 'agents-one', 'home-one']) expect(system).toContain(`The ${name} skill.`)
  })
})
