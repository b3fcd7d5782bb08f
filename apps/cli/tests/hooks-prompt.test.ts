import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { runDsh } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { jsonLines, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

/**
 * A hook script that appends its stdin payload to `log`. As a UserPromptSubmit
 * hook it blocks prompts mentioning "password" (exit 2, the reason on stderr)
 * and otherwise prints a line of context; as a SessionStart hook it prints the
 * session's source as context.
 */
async function hookScript(log: string): Promise<string> {
  const file = path.join(t.root, 'prompt-hook.mjs')
  await writeFile(
    file,
    `import { appendFileSync, readFileSync } from 'node:fs'
const payload = JSON.parse(readFileSync(0, 'utf8'))
appendFileSync(${JSON.stringify(log)}, JSON.stringify(payload) + '\\n')
if (payload.hook_event_name === 'SessionStart') {
  process.stdout.write('the team works on branch release-7 (' + payload.source + ')')
} else if (String(payload.prompt).includes('password')) {
  process.stderr.write('prompts must not carry credentials')
  process.exit(2)
} else {
  process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: 'UserPromptSubmit',
    additionalContext: 'ticket DSH-42 is the current task' } }))
}
`,
  )
  return `"${process.execPath}" "${file}"`
}

async function put(file: string, text: string) {
  await mkdir(path.dirname(file), { recursive: true })
  await writeFile(file, text)
}

async function run(args: string[]) {
  return runDsh(['--profile', 'headless', '--json', '--trust-workspace', ...args], {
    home: t.home,
    cwd: t.work,
    env: { ...t.env(), HOME: path.join(t.root, 'no-home'), CODEX_HOME: path.join(t.root, 'no-codex') },
  })
}

const sessionOf = (stdout: string) => JSON.parse(stdout.split('\n')[0] ?? '{}').sessionId as string

describe.each([
  ['Claude Code', '.claude/settings.json'],
  ['Codex', '.codex/hooks.json'],
])('%s UserPromptSubmit and SessionStart hooks', (_flavor, projectFile) => {
  async function setUp(log: string) {
    const command = await hookScript(log)
    const entry = [{ hooks: [{ type: 'command', command }] }]
    await put(
      path.join(t.work, projectFile),
      JSON.stringify({
        hooks: { UserPromptSubmit: entry, SessionStart: [{ matcher: 'startup|resume', hooks: entry[0]?.hooks }] },
      }),
    )
  }

  it('a blocked prompt never reaches the model; the user reads the reason and the run fails', async () => {
    const log = path.join(t.root, 'hooks.jsonl')
    await setUp(log)
    const result = await run(['my password is hunter2, store it'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('BLOCKED')
    expect(result.stderr).toContain('a UserPromptSubmit hook blocked this prompt: prompts must not carry credentials')
    expect(t.mock.requests).toHaveLength(0)
    const events = (await readSessionLog(t.home, sessionOf(result.stdout))).events
    expect(JSON.stringify(events)).not.toContain('hunter2')
    expect(events.filter((e) => e.type === 'user/message')).toHaveLength(0)
    const payloads = jsonLines(log)
    expect(payloads.map((p) => p.hook_event_name)).toEqual(['SessionStart', 'UserPromptSubmit'])
    expect(payloads[1]).toMatchObject({ prompt: 'my password is hunter2, store it', cwd: t.work })
  })

  it('context from SessionStart and UserPromptSubmit joins the prompt, in the log and the request; resume says so', async () => {
    const log = path.join(t.root, 'hooks.jsonl')
    await setUp(log)
    t.mock.enqueue(reply.text('On it.'))
    const result = await run(['fix the parser'])
    expect(result.code).toBe(0)
    const sent = JSON.stringify(t.mock.requests[0]?.body.messages)
    expect(sent).toContain('fix the parser')
    expect(sent).toContain('[SessionStart hook context] the team works on branch release-7 (startup)')
    expect(sent).toContain('[UserPromptSubmit hook context] ticket DSH-42 is the current task')
    const sessionId = sessionOf(result.stdout)
    const logged = (await readSessionLog(t.home, sessionId)).events.filter((e) => e.type === 'user/message')
    expect(JSON.stringify(logged)).toContain('ticket DSH-42 is the current task')

    t.mock.enqueue(reply.text('Again.'))
    const resumed = await run(['--resume', sessionId, 'and the lexer'])
    expect(resumed.code).toBe(0)
    expect(JSON.stringify(t.mock.requests[1]?.body.messages)).toContain('release-7 (resume)')
    expect(
      jsonLines(log)
        .filter((p) => p.hook_event_name === 'SessionStart')
        .map((p) => p.source),
    ).toEqual(['startup', 'resume'])
  })

  it('a SessionStart group whose matcher names another source does not run', async () => {
    const log = path.join(t.root, 'hooks.jsonl')
    const command = await hookScript(log)
    await put(
      path.join(t.work, projectFile),
      JSON.stringify({ hooks: { SessionStart: [{ matcher: 'resume', hooks: [{ type: 'command', command }] }] } }),
    )
    t.mock.enqueue(reply.text('Fine.'))
    const result = await run(['hello'])
    expect(result.code).toBe(0)
    expect(jsonLines(log)).toHaveLength(0)
    expect(JSON.stringify(t.mock.requests[0]?.body.messages)).not.toContain('release-7')
  })
})
