import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type MockReply, type RecordedRequest, reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { onlyStoredSession, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

/** Secret-looking variables planted in dsh's own environment; every value holds `leak-`. */
const SECRETS: Record<string, string> = {
  MYSQL_PWD: 'leak-mysql',
  NPM_CONFIG__AUTH: 'leak-npm',
  GH_PAT: 'leak-pat',
  DATABASE_URL: 'postgres://u:leak-db@h/db',
  GOOGLE_CREDENTIALS: 'leak-google',
  PASSPHRASE: 'leak-passphrase',
  MY_PASSWD: 'leak-passwd',
  CF_API_CREDENTIAL: 'leak-cf',
  SSH_AUTH_SOCK: '/tmp/leak-agent.sock',
  GPG_AGENT_INFO: '/tmp/leak-gpg:0:1',
  SERVICE_API_KEY: 'leak-key',
  GITHUB_TOKEN: 'leak-token',
  APP_SECRET: 'leak-secret',
  SESSION_COOKIE: 'leak-cookie',
  DB_PASSWORD: 'leak-password',
}

/** What dsh's environment also holds: its own settings, and what children must still get. */
function plantedEnv(): Record<string, string> {
  return {
    ...SECRETS,
    DSH_LOG_LEVEL: 'warn',
    DSH_STARTUP_TIMEOUT_MS: '30000',
    PWD: t.work,
    OLDPWD: t.root,
    NORMAL_SETTING: 'visible-normal',
    HOMEPAGE_URL: 'https://example.com/docs',
  }
}

const BEGIN = 'ENV-BEGIN'
const END = 'ENV-END'
const DUMP = `echo ${BEGIN}; env; echo ${END}`

/** The text blocks inside a logged or sent message (strings pass through). */
function textOf(value: unknown): string {
  if (typeof value === 'string') return value
  if (Array.isArray(value)) return value.map(textOf).join('\n')
  if (!value || typeof value !== 'object') return ''
  const { text, ...rest } = value as Record<string, unknown>
  return [
    typeof text === 'string' ? text : '',
    ...Object.values(rest)
      .filter((v) => typeof v === 'object')
      .map(textOf),
  ]
    .filter(Boolean)
    .join('\n')
}

/** The text of the stored session's tool results of tools named `tool`. */
async function loggedResults(tool: RegExp): Promise<string> {
  const { events } = await readSessionLog(t.home, onlyStoredSession(t.home))
  return events
    .filter((e) => e.type === 'tool/result' && tool.test(e.data.name))
    .map((e) => textOf(e.data.message))
    .join('\n')
}

const toolMessages = (req: RecordedRequest) =>
  ((req.body as { messages: { role: string; content: unknown }[] }).messages ?? [])
    .filter((m) => m.role === 'tool')
    .map((m) => textOf(m.content))
const lastTool = (req: RecordedRequest) => toolMessages(req).at(-1) ?? ''

/** The lines of one complete dump between the markers; fails when a marker is missing (a cut dump proves nothing). */
function dumpLines(text: string): string[] {
  const lines = text.split(/\r?\n/).map((line) => line.trimEnd())
  const begin = lines.lastIndexOf(BEGIN)
  const end = lines.lastIndexOf(END)
  expect(begin, `no ${BEGIN} in:\n${text}`).toBeGreaterThanOrEqual(0)
  expect(end, `no ${END} in:\n${text}`).toBeGreaterThan(begin)
  return lines.slice(begin + 1, end)
}

/** What a child saw: no secret-looking variable, no DSH_*, no key; PWD and ordinary variables present. */
function expectCleanEnvironment(text: string): string[] {
  const lines = dumpLines(text)
  const names = lines.map((line) => line.split('=')[0])
  for (const name of Object.keys(SECRETS)) expect(names, name).not.toContain(name)
  expect(names.filter((name) => name?.startsWith('DSH_'))).toEqual([])
  expect(text).not.toContain('leak-')
  // dsh's own model key, from DEEPSEEK_API_KEY.
  expect(text).not.toContain('sk-test-key')
  expect(lines).toContain('NORMAL_SETTING=visible-normal')
  expect(lines).toContain('HOMEPAGE_URL=https://example.com/docs')
  expect(names).toContain('PWD')
  expect(names).toContain('PATH')
  expect(names).toContain('HOME')
  return lines
}

/** A tiny MCP server over stdio (newline-delimited JSON-RPC) whose one tool, `env`, returns its own environment. */
const ENV_SERVER = `
import { createInterface } from 'node:readline'
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n')
createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line)
  if (request.id === undefined) return
  if (request.method === 'initialize') {
    send({ id: request.id, result: { protocolVersion: request.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'env-probe', version: '1.0.0' } } })
  } else if (request.method === 'tools/list') {
    send({ id: request.id, result: { tools: [{ name: 'env', description: 'Report the environment.', inputSchema: { type: 'object', properties: {} } }] } })
  } else if (request.method === 'tools/call') {
    const dump = Object.entries(process.env).map(([name, value]) => name + '=' + value).join('\\n')
    send({ id: request.id, result: { content: [{ type: 'text', text: '${BEGIN}\\n' + dump + '\\n${END}' }] } })
  } else {
    send({ id: request.id, error: { code: -32601, message: 'no method ' + request.method } })
  }
})
process.stdin.on('end', () => process.exit(0))
`

/** A patch file (JSON is YAML) with the given entries. */
async function patchFile(name: string, entries: unknown[]): Promise<string> {
  const file = path.join(t.root, name)
  await writeFile(file, JSON.stringify(entries))
  return file
}

async function mcpPatch(extra: unknown[] = []): Promise<string> {
  const script = path.join(t.root, 'env-server.mjs')
  await writeFile(script, ENV_SERVER)
  return patchFile('mcp.patch.yml', [
    { id: 'mcp', config: { servers: { probe: { command: process.execPath, args: [script] } } } },
    ...extra,
  ])
}

/** Model replies: the tool calls in order, each after the previous result, then a closing text. */
function script(...steps: ((req: RecordedRequest) => MockReply)[]): void {
  let next = 0
  t.mock.setFallback((req) =>
    next < steps.length ? (steps[next++] as (req: RecordedRequest) => MockReply)(req) : reply.text('Done.'),
  )
}

const call = (name: string, args: Record<string, unknown>) => () => reply.toolCalls([{ name, arguments: args }])

/** terminal_open, terminal_send of the dump, then terminal_read of everything the terminal holds. */
function terminalSteps(): ((req: RecordedRequest) => MockReply)[] {
  let id = ''
  const send = (req: RecordedRequest) => {
    id = /\[terminal (\S+) started/.exec(toolMessages(req).join('\n'))?.[1] ?? 'missing-id'
    return reply.toolCalls([{ name: 'terminal_send', arguments: { sessionId: id, text: DUMP } }])
  }
  const read = () => reply.toolCalls([{ name: 'terminal_read', arguments: { sessionId: id } }])
  return [call('terminal_open', { type: 'shell' }), send, read]
}

describe('the environment of spawned processes, through headless dsh', () => {
  it('bash (sandboxed) sees no secret-looking variable and no DSH_*, but PWD and ordinary variables', async () => {
    script(call('bash', { command: DUMP, description: 'Print the environment' }))
    const result = await t.headless(['show the environment'], plantedEnv())
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    const lines = expectCleanEnvironment(await loggedResults(/^bash$/))
    expect(lines).toContain(`PWD=${t.work}`)
    // What the model provider received is the same clean dump.
    expectCleanEnvironment(lastTool(t.mock.requests.at(-1) as RecordedRequest))
  })

  it('a background job sees the same clean environment (bash run_in_background, then job_output)', async () => {
    // job_output returns what arrived so far; to read the whole dump in one result, wait (job_list) until the job ended.
    let jobId = ''
    let read = false
    t.mock.setFallback((req) => {
      const text = lastTool(req)
      if (!text)
        return reply.toolCalls([
          { name: 'bash', arguments: { description: 'Run a command', command: DUMP, run_in_background: true } },
        ])
      jobId ||= /started background job (\S+):/.exec(text)?.[1] ?? 'missing-id'
      if (read) return reply.text('Done.')
      if (!text.includes(`${jobId} [exited`)) return reply.toolCalls([{ name: 'job_list', arguments: {} }])
      read = true
      return reply.toolCalls([{ name: 'job_output', arguments: { job_id: jobId } }])
    })
    const result = await t.headless(['show the environment in the background'], plantedEnv())
    expect(result.code).toBe(0)
    expect(await loggedResults(/^bash$/)).toMatch(/started background job/)
    expectCleanEnvironment(await loggedResults(/^job_output$/))
  })

  it('a terminal sees the same clean environment', async () => {
    script(...terminalSteps())
    const result = await t.headless(
      ['--permission', 'danger-full-access', 'show the environment in a terminal'],
      plantedEnv(),
    )
    expect(result.code).toBe(0)
    expectCleanEnvironment(await loggedResults(/^terminal_/))
  })

  it('an MCP stdio server sees the same clean environment', async () => {
    const patch = await mcpPatch()
    script(call('mcp__probe__env', {}))
    const result = await t.headless(
      ['--patch', patch, '--permission', 'danger-full-access', 'ask the server'],
      plantedEnv(),
    )
    expect(result.code).toBe(0)
    expectCleanEnvironment(await loggedResults(/^mcp__probe__env$/))
  })

  it('one row on the subprocess plugin configures bash, terminals and MCP servers alike', async () => {
    const policy = {
      id: 'subprocess',
      config: { environment: { exclude: ['NORMAL_*'], set: { FROM_POLICY: 'policy-value' } } },
    }
    const patch = await mcpPatch([policy])
    script(
      call('bash', { command: DUMP, description: 'Print the environment' }),
      call('mcp__probe__env', {}),
      ...terminalSteps(),
    )
    const env = { ...plantedEnv(), NORMAL_OTHER: 'also-excluded' }
    const result = await t.headless(
      ['--patch', patch, '--permission', 'danger-full-access', 'show every environment'],
      env,
    )
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    for (const tool of [/^bash$/, /^mcp__probe__env$/, /^terminal_/]) {
      const lines = dumpLines(await loggedResults(tool))
      expect(lines, String(tool)).toContain('FROM_POLICY=policy-value')
      expect(
        lines.filter((line) => line.startsWith('NORMAL_')),
        String(tool),
      ).toEqual([])
      expect(
        lines.some((line) => line.startsWith('PWD=')),
        String(tool),
      ).toBe(true)
      expect(lines.join('\n'), String(tool)).not.toContain('leak-')
    }
  })

  it('refuses to start with a bad pattern in the policy, naming the row, the field and the entry', async () => {
    const patch = await patchFile('bad.patch.yml', [
      { id: 'subprocess', config: { environment: { exclude: ['GOOD_*', 'not a pattern'] } } },
    ])
    t.mock.enqueue(reply.text('never asked'))
    const result = await t.headless(['--patch', patch, 'hello'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('row "subprocess"')
    expect(result.stderr).toMatch(/environment\.exclude\[1\] "not a pattern" is not a valid pattern/)
    expect(t.mock.requests).toHaveLength(0)
  })
})
