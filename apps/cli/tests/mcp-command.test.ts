import { readFileSync } from 'node:fs'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { repoRoot, runDsh } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'

const t = useMockedHeadless()
const fixture = path.join(repoRoot, 'packages/mcp/mcp/tests/fixtures/server.mjs')
const dsh = (args: string[]) => runDsh(args, { home: t.home, cwd: t.work, env: t.env() })

describe('dsh mcp add|list|remove', () => {
  it('adds a server to the home patch; every profile starts it, and a rule lets headless call it', async () => {
    const added = await dsh(['mcp', 'add', '--env', 'GREETING=hi', 'adder', process.execPath, fixture])
    expect(added.code).toBe(0)
    const patch = path.join(t.home, 'cordis.patch.yml')
    expect(added.stderr).toContain(`added MCP server adder in ${patch}`)
    expect(readFileSync(patch, 'utf8')).toContain('GREETING: hi')

    const listed = await dsh(['mcp', 'list'])
    expect(listed.stdout).toBe(
      `adder\tstdio ${JSON.stringify(process.execPath)} ${JSON.stringify(fixture)} (env: GREETING)\n`,
    )
    const dump = await dsh(['--profile', 'headless', '--dump-config'])
    expect(dump.stdout).toContain(fixture)

    t.mock.setFallback((req) =>
      toolTexts(req).length
        ? reply.text('Done.')
        : reply.toolCalls([{ name: 'mcp__adder__add', arguments: { a: 2, b: 3 } }]),
    )
    const run = await dsh(['--profile', 'headless', '--allow', 'mcp__adder__*', 'add'])
    expect(run.code).toBe(0)
    expect(toolTexts(t.mock.requests.at(-1))).toEqual(['5'])

    const removed = await dsh(['mcp', 'remove', 'adder'])
    expect(removed.code).toBe(0)
    expect((await dsh(['mcp', 'list'])).stdout).toBe(`no MCP servers in ${patch}\n`)
    expect((await dsh(['mcp', 'remove', 'adder'])).code).toBe(1)
  })

  it('--profile edits that profile’s patch and keeps its header; an HTTP server takes headers', async () => {
    const added = await dsh([
      'mcp',
      '--profile',
      'web',
      'add',
      '--header',
      'Authorization: Bearer x',
      'remote',
      'https://mcp.example.com/mcp',
    ])
    expect(added.code).toBe(0)
    const text = readFileSync(path.join(t.home, 'profiles/web/cordis.patch.yml'), 'utf8')
    expect(text).toMatch(/^# Your patch layer for this profile/)
    expect(text).toContain('url: https://mcp.example.com/mcp')
    expect(text).toContain('Authorization: Bearer x')
    expect((await dsh(['mcp', '--profile', 'web', 'list'])).stdout).toBe('remote\thttp https://mcp.example.com/mcp\n')
    expect((await dsh(['mcp', 'list'])).stdout).toContain('no MCP servers')
  })

  it('bad input names the culprit', async () => {
    const bad = await dsh(['mcp', 'add', 'bad name', 'node'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('server name "bad name" must be 1 to 32 letters')
    const noVerb = await dsh(['mcp', 'frobnicate'])
    expect(noVerb.code).toBe(1)
    expect(noVerb.stderr).toContain('unknown command "frobnicate"')
    expect(noVerb.stderr).toContain('usage: dsh mcp')
    const env = await dsh(['mcp', 'add', '--env', 'NOEQUALS', 'x', 'node'])
    expect(env.stderr).toContain('--env needs KEY=VALUE, got "NOEQUALS"')
  })
})
