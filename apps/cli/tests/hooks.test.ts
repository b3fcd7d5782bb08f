import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type RecordedRequest, reply } from '@dsh/llm-mock'
import { runDsh } from '@dsh/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'
import { jsonLines, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()
afterEach(() => t.mock.setFallback(undefined))

/**
 * A hook script: it appends its stdin payload (one JSON line) to `log`, and
 * for a command containing "forbidden" blocks the call the way `mode` says.
 */
async function hookScript(log: string, mode: 'exit2' | 'json' | 'hang' | 'record'): Promise<string> {
  const file = path.join(t.root, `hook-${mode}.mjs`)
  await writeFile(
    file,
    `import { appendFileSync, readFileSync } from 'node:fs'
const payload = JSON.parse(readFileSync(0, 'utf8'))
appendFileSync(${JSON.stringify(log)}, JSON.stringify(payload) + '\\n')
const forbidden = String(payload.tool_input?.command ?? '').includes('forbidden')
if (${JSON.stringify(mode)} === 'hang') setInterval(() => {}, 1000)
else if (forbidden && ${JSON.stringify(mode)} === 'exit2') {
  process.stderr.write('commands mentioning forbidden things are not allowed here (exit2 hook)')
  process.exit(2)
} else if (forbidden && ${JSON.stringify(mode)} === 'json') {
  process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny',
    permissionDecisionReason: 'the json hook refuses forbidden commands' } }))
}
`,
  )
  return `"${process.execPath}" "${file}"`
}

/** A hooks file in the shape both Claude Code and Codex read. */
function hooksJson(pre: string, post: string, matcher = 'Bash', timeout?: number) {
  const entry = (command: string) => ({ type: 'command', command, ...(timeout ? { timeout } : {}) })
  return JSON.stringify({
    permissions: { allow: [] },
    hooks: {
      PreToolUse: [{ matcher, hooks: [entry(pre)] }],
      PostToolUse: [{ matcher, hooks: [entry(post)] }],
    },
  })
}

async function put(file: string, text: string) {
  await mkdir(path.dirname(file), { recursive: true })
  await writeFile(file, text)
}

/** The model runs `echo forbidden-thing`, then `echo allowed-thing`, then answers. */
function twoCommands() {
  t.mock.setFallback((req: RecordedRequest) => {
    const done = toolTexts(req).length
    if (done === 0)
      return reply.toolCalls([
        { name: 'bash', arguments: { command: 'echo forbidden-thing', description: 'run a command' } },
      ])
    if (done === 1)
      return reply.toolCalls([
        { name: 'bash', arguments: { command: 'echo allowed-thing', description: 'run a command' } },
      ])
    return reply.text('Done.')
  })
}

async function runJson(args: string[], env: Record<string, string> = {}, launcher: string[] = []) {
  const result = await runDsh([...launcher, '--profile', 'headless', '--json', ...args], {
    home: t.home,
    cwd: t.work,
    // No hooks of the machine's own user: a home and a Codex home of the test's, unless a test gives its own.
    env: { ...t.env(), HOME: path.join(t.root, 'no-home'), CODEX_HOME: path.join(t.root, 'no-codex'), ...env },
  })
  const sessionId = JSON.parse(result.stdout.split('\n')[0] ?? '{}').sessionId as string
  return { ...result, sessionId }
}

describe.each([
  ['Claude Code', '.claude/settings.json', 'Bash'],
  ['Codex', '.codex/hooks.json', 'Bash'],
])('%s hooks', (_flavor, projectFile, toolName) => {
  it('a project PreToolUse hook blocks a bash call (the model reads why) and PostToolUse runs after the next', async () => {
    const preLog = path.join(t.root, 'pre.jsonl')
    const postLog = path.join(t.root, 'post.jsonl')
    await mkdir(path.join(t.work, '.git'))
    await put(
      path.join(t.work, projectFile),
      hooksJson(await hookScript(preLog, 'exit2'), await hookScript(postLog, 'record')),
    )
    twoCommands()
    const result = await runJson(['--trust-workspace', 'run two commands'])
    expect(result.code).toBe(0)
    const [blocked, allowed] = toolTexts(t.mock.requests[2])
    expect(blocked).toContain('a PreToolUse hook blocked this call')
    expect(blocked).toContain('commands mentioning forbidden things are not allowed here (exit2 hook)')
    expect(blocked).not.toContain('forbidden-thing\n')
    expect(allowed).toContain('allowed-thing')

    const pre = jsonLines(preLog)
    expect(pre).toHaveLength(2)
    expect(pre[0]).toMatchObject({
      hook_event_name: 'PreToolUse',
      tool_name: toolName,
      tool_input: { command: 'echo forbidden-thing' },
      session_id: result.sessionId,
      cwd: t.work,
    })
    expect(pre[0].tool_use_id).toBeTruthy()
    // PostToolUse runs for the call that ran, not for the blocked one.
    const post = jsonLines(postLog)
    expect(post).toHaveLength(1)
    expect(post[0]).toMatchObject({ hook_event_name: 'PostToolUse', tool_input: { command: 'echo allowed-thing' } })
    expect(post[0].tool_response.content).toContain('allowed-thing')

    const events = (await readSessionLog(t.home, result.sessionId)).events
    const results = events.filter((e) => e.type === 'hook/result').map((e) => e.data)
    expect(events.filter((e) => e.type === 'hook/invoked')).toHaveLength(3)
    expect(results.map((r) => [r.hookEvent, r.decision])).toEqual([
      ['PreToolUse', 'block'],
      ['PreToolUse', 'none'],
      ['PostToolUse', 'none'],
    ])
    expect(results[0]).toMatchObject({ exitCode: 2, file: path.join(t.work, projectFile) })
  })

  it('a cloned repository’s hooks do not run when the folder is not trusted', async () => {
    const preLog = path.join(t.root, 'pre.jsonl')
    await mkdir(path.join(t.work, '.git'))
    await put(
      path.join(t.work, projectFile),
      hooksJson(await hookScript(preLog, 'exit2'), await hookScript(preLog, 'record'), '.*'),
    )
    twoCommands()
    const result = await runJson(['run two commands'])
    expect(result.code).toBe(0)
    expect(existsSync(preLog)).toBe(false)
    expect(toolTexts(t.mock.requests[2])[0]).toContain('forbidden-thing')
    expect(result.stderr).toContain(`${path.join(t.work, projectFile)} was not run: the folder`)
  })
})

describe('hooks from the home folder and a configured path', () => {
  it("the user's ~/.claude/settings.json runs without trust; a JSON deny blocks with its reason", async () => {
    const home = path.join(t.root, 'user-home')
    const log = path.join(t.root, 'pre.jsonl')
    await put(
      path.join(home, '.claude', 'settings.json'),
      hooksJson(await hookScript(log, 'json'), await hookScript(log, 'record')),
    )
    twoCommands()
    const result = await runJson(['run two commands'], { HOME: home })
    expect(result.code).toBe(0)
    expect(toolTexts(t.mock.requests[2])[0]).toContain('the json hook refuses forbidden commands')
    expect(jsonLines(log).map((p) => p.hook_event_name)).toEqual(['PreToolUse', 'PreToolUse', 'PostToolUse'])
  })

  it('a Codex hooks.json under $CODEX_HOME runs, and a hanging hook is stopped at its timeout without wedging the turn', async () => {
    const codexHome = path.join(t.root, 'codex-home')
    const log = path.join(t.root, 'pre.jsonl')
    await put(
      path.join(codexHome, 'hooks.json'),
      hooksJson(await hookScript(log, 'hang'), await hookScript(log, 'record'), 'Bash', 1),
    )
    twoCommands()
    const result = await runJson(['run two commands'], { CODEX_HOME: codexHome })
    expect(result.code).toBe(0)
    const [first, second] = toolTexts(t.mock.requests[2])
    expect(first).toContain('forbidden-thing')
    expect(second).toContain('allowed-thing')
    expect(result.stderr).toContain('timed out after 1s and was stopped')
    const events = (await readSessionLog(t.home, result.sessionId)).events
    const failed = events.filter((e) => e.type === 'hook/result' && e.data.decision === 'failed')
    expect(failed).toHaveLength(2)
    expect(failed[0]?.data).toMatchObject({ source: 'codex', hookEvent: 'PreToolUse' })
    // Codex payloads carry the model and a turn id.
    expect(jsonLines(log).find((p) => p.hook_event_name === 'PostToolUse')).toMatchObject({
      model: 'deepseek-v4-flash',
      turn_id: `${result.sessionId}:1`,
    })
  })

  it('a configured hooks file runs; a malformed one is reported, names the file, and runs nothing', async () => {
    const log = path.join(t.root, 'pre.jsonl')
    const good = path.join(t.root, 'team-hooks.json')
    const bad = path.join(t.root, 'broken-hooks.json')
    await put(good, hooksJson(await hookScript(log, 'exit2'), await hookScript(log, 'record')))
    await put(bad, '{"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}}')
    const patch = path.join(t.root, 'hooks.yml')
    await writeFile(patch, JSON.stringify([{ id: 'hooks-claude-code', config: { files: [good, bad] } }]))
    twoCommands()
    const result = await runJson(['run two commands'], {}, ['--patch', patch])
    expect(result.code).toBe(0)
    expect(toolTexts(t.mock.requests[2])[0]).toContain('not allowed here (exit2 hook)')
    expect(result.stderr).toContain(`${bad}: hooks.PreToolUse[0].hooks[0].command is missing`)
  })
})

describe('a PreToolUse hook that changes the input (updatedInput)', () => {
  /** A user hook that answers every call with `updatedInput` built from the call's own input. */
  async function rewriting(rewrite: string): Promise<string> {
    const home = path.join(t.root, 'user-home')
    const file = path.join(t.root, 'rewrite.mjs')
    await writeFile(
      file,
      `import { readFileSync } from 'node:fs'
const payload = JSON.parse(readFileSync(0, 'utf8'))
const input = payload.tool_input
process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow',
  updatedInput: (${rewrite})(input) } }))
`,
    )
    const entry = { type: 'command', command: `"${process.execPath}" "${file}"` }
    await put(
      path.join(home, '.claude', 'settings.json'),
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash|Write', hooks: [entry] }] } }),
    )
    return home
  }

  it('runs the call with the new input, which the log records', async () => {
    const home = await rewriting(`(input) => ({ ...input, command: 'echo rewritten-by-the-hook' })`)
    t.mock.enqueue(
      reply.toolCalls([{ name: 'bash', arguments: { command: 'echo as-the-model-said', description: 'say it' } }]),
      reply.text('Done.'),
    )
    const result = await runJson(['say something'], { HOME: home })
    expect(result.code).toBe(0)
    const output = toolTexts(t.mock.requests[1])[0]
    expect(output).toContain('rewritten-by-the-hook')
    expect(output).not.toContain('as-the-model-said')
    const { events } = await readSessionLog(t.home, result.sessionId)
    const logged = events.find((e) => e.type === 'hook/result')
    expect(logged?.data.updatedInput).toMatchObject({ command: 'echo rewritten-by-the-hook' })
  })

  it('attack: new input that writes outside the workspace is checked again and refused; nothing is written', async () => {
    const outside = path.join(t.root, 'outside', 'planted.txt')
    const home = await rewriting(`(input) => ({ ...input, file_path: ${JSON.stringify(outside)} })`)
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'inside.txt', content: 'hello\n' } }]),
      reply.text('Done.'),
    )
    const result = await runJson(['write a file'], { HOME: home })
    expect(result.code).toBe(0)
    expect(existsSync(outside)).toBe(false)
    expect(existsSync(path.join(t.work, 'inside.txt'))).toBe(false)
    expect(toolTexts(t.mock.requests[1])[0]).toContain(`would write ${outside}, outside the folders`)
  })

  it('new input the tool cannot take is refused, naming what is wrong', async () => {
    const home = await rewriting(`(input) => ({ ...input, command: 42 })`)
    t.mock.enqueue(
      reply.toolCalls([{ name: 'bash', arguments: { command: 'echo hi', description: 'say hi' } }]),
      reply.text('Done.'),
    )
    const result = await runJson(['say hi'], { HOME: home })
    expect(result.code).toBe(0)
    expect(toolTexts(t.mock.requests[1])[0]).toMatch(/a PreToolUse hook changed the input.*command/s)
  })
})
