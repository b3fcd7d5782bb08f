import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { type RecordedRequest, reply } from '@dsh/llm-mock'
import { repoRoot, runDsh } from '@dsh/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'
import { readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()
afterEach(() => t.mock.setFallback(undefined))

const adder = path.join(repoRoot, 'packages/mcp/mcp/tests/fixtures/server.mjs')

/** An `--mcp-config` file with the one test server `adder` (its tool `add` sums a and b). */
async function mcpConfig(): Promise<string> {
  const file = path.join(t.root, 'servers.json')
  await writeFile(file, JSON.stringify({ mcpServers: { adder: { command: process.execPath, args: [adder] } } }))
  return file
}

/** The model makes these calls one after the other, then answers "Done.". */
function calls(...list: { name: string; arguments: Record<string, unknown> }[]) {
  t.mock.setFallback((req: RecordedRequest) => {
    const next = list[toolTexts(req).length]
    return next ? reply.toolCalls([next]) : reply.text('Done.')
  })
}

/** Runs headless with `--json` and a home without anyone's hooks; returns the result and the run's session log. */
async function run(args: string[], launcher: string[] = []) {
  const result = await runDsh([...launcher, '--profile', 'headless', '--json', ...args], {
    home: t.home,
    cwd: t.work,
    env: { ...t.env(), HOME: path.join(t.root, 'user-home') },
  })
  const sessionId = JSON.parse(result.stdout.split('\n')[0] ?? '{}').sessionId as string
  const events = sessionId ? (await readSessionLog(t.home, sessionId)).events : []
  const decisions = events.filter((e) => e.type === 'permission/decision').map((e) => e.data)
  return { ...result, texts: toolTexts(t.mock.requests.at(-1)), decisions }
}

const add = { name: 'mcp__adder__add', arguments: { a: 2, b: 3 } }
const bashCall = (command: string) => ({ name: 'bash', arguments: { command, description: 'run a command' } })

describe('allow and deny rules through the headless bin', () => {
  it('an MCP call is denied in headless under the default preset without a rule', async () => {
    calls(add)
    const result = await run(['--mcp-config', await mcpConfig(), 'add'])
    expect(result.code).toBe(0)
    expect(result.texts[0]).toContain('no one is available to approve it here')
  })

  it.each([['mcp__adder__*'], ['mcp__adder'], ['mcp__adder__add']])(
    '--allow %s runs the MCP tool under the default preset, logged with the rule',
    async (rule) => {
      calls(add)
      const result = await run(['--mcp-config', await mcpConfig(), '--allow', rule, 'add'])
      expect(result.code).toBe(0)
      expect(result.texts).toEqual(['5'])
      expect(result.decisions).toMatchObject([{ tool: 'mcp__adder__add', decision: 'allow', rule }])
      expect(result.stderr).not.toContain('matches no known tool')
    },
  )

  it('deny wins over allow', async () => {
    calls(add)
    const config = await mcpConfig()
    const result = await run(['--mcp-config', config, '--allow', 'mcp__adder__*', '--deny', 'mcp__adder__add', 'add'])
    expect(result.code).toBe(0)
    expect(result.texts[0]).toContain('matches the deny rule "mcp__adder__add"')
    expect(result.decisions).toMatchObject([{ decision: 'deny', rule: 'mcp__adder__add' }])
  })

  it('a deny rule holds under danger-full-access too', async () => {
    calls(add)
    const config = await mcpConfig()
    const result = await run([
      '--mcp-config',
      config,
      '--permission',
      'danger-full-access',
      '--deny',
      'mcp__adder',
      'add',
    ])
    expect(result.texts[0]).toContain('matches the deny rule "mcp__adder"')
  })

  it('bash(...) deny: every command of the line counts, and the others still run', async () => {
    calls(
      bashCall('echo one; touch pwned-1'),
      bashCall('echo $(touch pwned-2)'),
      bashCall('X=1 /usr/bin/touch pwned-3'),
      bashCall('echo still-runs'),
    )
    const result = await run(['--deny', 'bash(touch *)', 'go'])
    expect(result.code).toBe(0)
    for (const n of [1, 2, 3]) {
      expect(result.texts[n - 1]).toContain('matches the deny rule "bash(touch *)"')
      expect(existsSync(path.join(t.work, `pwned-${n}`))).toBe(false)
    }
    expect(result.texts[3]).toContain('still-runs')
  })

  it('write(...) deny: a path pattern relative to the workspace, also through a symlink', async () => {
    await mkdir(path.join(t.work, 'secrets'))
    calls(
      { name: 'write', arguments: { file_path: 'secrets/key.txt', content: 'x' } },
      bashCall('ln -s secrets via-link'),
      { name: 'write', arguments: { file_path: 'via-link/key.txt', content: 'x' } },
      { name: 'write', arguments: { file_path: 'src/ok.txt', content: 'fine' } },
    )
    const result = await run(['--deny', 'write(secrets/**)', 'go'])
    expect(result.texts[0]).toContain('matches the deny rule "write(secrets/**)"')
    expect(result.texts[2]).toContain('matches the deny rule "write(secrets/**)"')
    expect(existsSync(path.join(t.work, 'secrets/key.txt'))).toBe(false)
    expect(existsSync(path.join(t.work, 'src/ok.txt'))).toBe(true)
  })

  it('a rule that matches no known tool or MCP server is reported, naming it', async () => {
    calls()
    const result = await run(['--allow', 'nosuchtool', '--deny', 'mcp__ghost__*', '--allow', 'bash(git *)', 'hi'])
    expect(result.code).toBe(0)
    expect(result.stderr).toContain('the allow rule "nosuchtool" matches no known tool or MCP server')
    expect(result.stderr).toContain('the deny rule "mcp__ghost__*" matches no known tool or MCP server')
    expect(result.stderr).not.toContain('"bash(git *)"')
  })

  it('a malformed rule is a usage error naming the flag and the rule', async () => {
    const result = await t.headless(['--allow', 'bash(npm test', 'hi'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('--allow: permission rule "bash(npm test": the specifier must end with ")"')
    expect(t.mock.requests).toHaveLength(0)
  })
})

describe('web_fetch(domain:...)', () => {
  let server: Server
  let port = 0
  beforeAll(async () => {
    server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('page body 4711'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => new Promise((resolve) => server.close(resolve)))

  it('pre-approves the named host only; the network stays asked (denied here) for others', async () => {
    const patch = path.join(t.root, 'private.yml')
    await writeFile(patch, '- id: web-fetch\n  config:\n    allowPrivate: true\n')
    calls(
      { name: 'web_fetch', arguments: { url: `http://localhost:${port}/a` } },
      { name: 'web_fetch', arguments: { url: `http://127.0.0.1:${port}/b` } },
    )
    const result = await run(['--allow', 'web_fetch(domain:localhost)', 'fetch'], ['--patch', patch])
    expect(result.code).toBe(0)
    expect(result.texts[0]).toContain('page body 4711')
    expect(result.texts[1]).toContain('needs network access')
    expect(result.texts[1]).not.toContain('page body')
  })
})

describe('attack: an allow rule for bash(git *)', () => {
  /** A home hook (Claude Code's settings) that asks about every bash call: without a rule, headless denies them. */
  async function askingHook(): Promise<void> {
    const script = path.join(t.root, 'ask.mjs')
    await writeFile(
      script,
      `process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'ask', permissionDecisionReason: 'every command needs a yes' } }))\n`,
    )
    const settings = path.join(t.root, 'user-home/.claude/settings.json')
    await mkdir(path.dirname(settings), { recursive: true })
    const hook = { type: 'command', command: `"${process.execPath}" "${script}"` }
    await writeFile(settings, JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [hook] }] } }))
  }

  it('answers the ask for a plain git command, never for one that chains, pipes or substitutes another', async () => {
    await askingHook()
    const attacks = [
      'git --version; touch pwned-1',
      'git --version && touch pwned-2',
      'git --version | tee pwned-3',
      'git log $(touch pwned-4)',
      'git log `touch pwned-5`',
      'git --version > pwned-6',
      'git --version\ntouch pwned-7',
    ]
    calls(bashCall('git --version'), ...attacks.map(bashCall))
    const result = await run(['--allow', 'bash(git *)', 'go'])
    expect(result.code).toBe(0)
    expect(result.texts[0]).toContain('git version')
    expect(result.decisions[0]).toMatchObject({ decision: 'allow', rule: 'bash(git *)' })
    attacks.forEach((_, i) => {
      expect(result.texts[i + 1]).toContain('every command needs a yes')
      expect(existsSync(path.join(t.work, `pwned-${i + 1}`))).toBe(false)
    })
  })

  it('without the rule the same plain command is not run', async () => {
    await askingHook()
    calls(bashCall('git --version'))
    const result = await run(['go'])
    expect(result.texts[0]).toContain('every command needs a yes')
    expect(result.texts[0]).not.toContain('git version')
  })
})

describe('rules in settings.yaml (the web settings page writes them)', () => {
  it('apply in headless after the command line rules; a malformed section is reported and its rules left out', async () => {
    await mkdir(t.home, { recursive: true })
    const settings = path.join(t.home, 'settings.yaml')
    await writeFile(settings, 'permission:\n  deny: ["write(blocked*.txt)"]\n')
    calls({ name: 'write', arguments: { file_path: 'blocked.txt', content: 'no\n' } })
    const denied = await run(['write it'])
    expect(existsSync(path.join(t.work, 'blocked.txt'))).toBe(false)
    expect(denied.decisions).toContainEqual(expect.objectContaining({ decision: 'deny', rule: 'write(blocked*.txt)' }))

    await writeFile(settings, 'permission:\n  deny: ["bash("]\n')
    calls({ name: 'write', arguments: { file_path: 'allowed.txt', content: 'yes\n' } })
    const broken = await run(['write it'])
    expect(broken.stderr).toContain(`permission: the rules in ${settings} are not applied`)
    expect(broken.stderr).toContain('permission.deny[0]')
    expect(existsSync(path.join(t.work, 'allowed.txt'))).toBe(true)
  })
})
