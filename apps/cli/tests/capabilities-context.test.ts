import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { reply } from '@dsh/llm-mock'
import { runDsh } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import { useMockedHeadless } from './support/mocked-headless.ts'
import { type LoggedEvent, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

/** Runs headless with `--json` and returns the session id with the result. */
async function run(task: string, extra: string[] = [], cwd = t.work) {
  const result = await runDsh(['--profile', 'headless', '--json', ...extra, task], { home: t.home, cwd, env: t.env() })
  const first = result.stdout.split('\n')[0] ?? ''
  const sessionId = first.startsWith('{') ? (JSON.parse(first).sessionId as string) : ''
  return { ...result, sessionId }
}

const systemOf = (request = 0): string => {
  const message = t.mock.requests[request]?.body.messages[0]
  expect(message?.role).toBe('system')
  return message.content as string
}

const toolMessage = (request: number, index = 0): string =>
  t.mock.requests[request]?.body.messages.filter((m: { role: string }) => m.role === 'tool')[index]?.content

const ofType = (events: LoggedEvent[], type: string) => events.filter((e) => e.type === type)

async function project(files: Record<string, string | Buffer> = {}) {
  await mkdir(path.join(t.work, '.git'), { recursive: true })
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(t.work, name)), { recursive: true })
    await writeFile(path.join(t.work, name), content)
  }
}

describe('AGENTS.md instructions', () => {
  it('puts the user-wide and project AGENTS.md into the first request', async () => {
    await project({ 'AGENTS.md': 'Run the linter before every commit. PROJECT-MARKER' })
    await mkdir(t.home, { recursive: true })
    await writeFile(path.join(t.home, 'AGENTS.md'), 'Answer briefly. HOME-MARKER')
    t.mock.enqueue(reply.text('Noted.'))
    const result = await t.headless(['hello'])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe('')
    const system = systemOf()
    expect(system).toContain('Run the linter before every commit. PROJECT-MARKER')
    expect(system.indexOf('HOME-MARKER')).toBeGreaterThan(0)
    expect(system.indexOf('HOME-MARKER')).toBeLessThan(system.indexOf('PROJECT-MARKER'))
  })

  it('picks up an edited AGENTS.md at the next turn and logs the new system message', async () => {
    await project({ 'AGENTS.md': 'VERSION-ONE' })
    t.mock.enqueue(reply.text('First.'))
    const first = await run('first')
    expect(first.code).toBe(0)
    await writeFile(path.join(t.work, 'AGENTS.md'), 'VERSION-TWO')
    t.mock.enqueue(reply.text('Second.'))
    const second = await run('second', ['--resume', first.sessionId])
    expect(second.code).toBe(0)
    expect(systemOf(0)).toContain('VERSION-ONE')
    expect(systemOf(1)).toContain('VERSION-TWO')
    expect(systemOf(1)).not.toContain('VERSION-ONE')
    const systems = ofType((await readSessionLog(t.home, first.sessionId)).events, 'system/message')
    expect(systems).toHaveLength(2)
    expect(systems[1]?.replaces).toEqual([systems[0]?.seq])
    expect(JSON.stringify(systems[1]?.data)).toContain('VERSION-TWO')
  })

  it('cuts a huge AGENTS.md, says so in the prompt and warns', async () => {
    await project({ 'AGENTS.md': `HEAD-MARKER ${'x'.repeat(300_000)}` })
    t.mock.enqueue(reply.text('Fine.'))
    const result = await t.headless(['hello'])
    expect(result.code).toBe(0)
    const system = systemOf()
    expect(system).toContain('HEAD-MARKER')
    expect(system).toContain('[cut: this file has 300012 bytes; only the first 32768 are shown]')
    expect(system.length).toBeLessThan(40_000)
    expect(result.stderr).toContain(
      `${path.join(t.work, 'AGENTS.md')} has 300012 bytes; only the first 32768 reach the prompt`,
    )
  })

  it('reports an AGENTS.md that is not UTF-8 and goes on with the others', async () => {
    const bad = path.join(t.work, 'pkg', 'AGENTS.md')
    await project({ 'AGENTS.md': 'OUTER-MARKER', 'pkg/AGENTS.md': Buffer.from([0x68, 0x69, 0xff, 0xfe, 0xfd]) })
    t.mock.enqueue(reply.text('Still working.'))
    const result = await run('hello', [], path.join(t.work, 'pkg'))
    expect(result.code).toBe(0)
    const system = systemOf()
    expect(system).toContain('OUTER-MARKER')
    expect(system).toContain(`<agents-md path="${bad}" scope="project">\n[not loaded: it is not valid UTF-8 text]`)
    expect(result.stderr).toContain(`${bad} was not loaded into the prompt: it is not valid UTF-8 text`)
  })
})

describe('skills', () => {
  it('lists skills in the prompt and lets the model load one; a SKILL.md without frontmatter is skipped with a warning', async () => {
    const folder = path.join(t.work, '.dsh', 'skills', 'release')
    const plain = path.join(t.work, '.dsh', 'skills', 'notes', 'SKILL.md')
    await project({
      '.dsh/skills/release/SKILL.md':
        '---\nname: release\ndescription: Cut a release of this project.\n---\nBump the version, then run ./publish.sh. SKILL-BODY-MARKER\n',
      '.dsh/skills/release/publish.sh': 'echo publish\n',
      '.dsh/skills/notes/SKILL.md': '# Notes\nNo frontmatter here.\n',
    })
    t.mock.enqueue(
      reply.toolCalls([{ name: 'skill', arguments: { name: 'release' } }]),
      reply.text('Release steps loaded.'),
    )
    const result = await t.headless(['cut a release'])
    expect(result.code).toBe(0)
    expect(systemOf()).toContain('- `release`: Cut a release of this project.')
    expect(systemOf()).not.toContain('`notes`')
    expect(JSON.stringify(t.mock.requests[0]?.body.messages)).not.toContain('SKILL-BODY-MARKER')
    const loaded = toolMessage(1)
    expect(loaded).toContain('SKILL-BODY-MARKER')
    expect(loaded).toContain(`folder="${folder}"`)
    expect(result.stderr).toContain(`${plain} has no YAML frontmatter`)
  })
})

describe('todo_write', () => {
  it('logs the list in the session file and summarises it for the model', async () => {
    const todos = [
      { content: 'Read the code', status: 'completed' },
      { content: 'Fix the bug', status: 'in_progress' },
      { content: 'Run the tests', status: 'pending' },
    ]
    t.mock.enqueue(
      reply.toolCalls([{ name: 'todo_write', arguments: { todos } }]),
      reply.text('Working through the list.'),
    )
    const result = await run('fix the bug')
    expect(result.code).toBe(0)
    const written = ofType((await readSessionLog(t.home, result.sessionId)).events, 'todo/write')
    expect(written.map((e) => e.data)).toEqual([{ todos }])
    expect(toolMessage(1)).toContain('Updated the todo list: 1 pending, 1 in progress, 1 completed.')
  })
})

describe('ask_user_question', () => {
  it('in headless returns an error the model can read, and the run goes on', async () => {
    const question = { id: 'port', question: 'Which port?', options: [{ label: '8080' }, { label: '3000' }] }
    t.mock.enqueue(
      reply.toolCalls([{ name: 'ask_user_question', arguments: { questions: [question] } }]),
      reply.text('Using 8080.'),
    )
    const result = await t.headless(['start the server'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Using 8080.\n')
    expect(toolMessage(1)).toBe(
      'Error: no user is available to answer questions in this run; proceed with your best judgement',
    )
  })
})

describe('plan mode', () => {
  it('denies a write while planning; exit_plan_mode with no approver is denied and the session keeps planning', async () => {
    await mkdir(t.home, { recursive: true })
    await writeFile(path.join(t.home, 'cordis.patch.yml'), '- id: plan-mode\n  config:\n    startInPlanMode: true\n')
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'plan.txt', content: 'too early' } }]),
      reply.toolCalls([{ name: 'exit_plan_mode', arguments: { plan: '# Write plan.txt\n\n1. Create the file.' } }]),
      reply.text('Here is my plan: create plan.txt.'),
    )
    const result = await run('create plan.txt')
    expect(result.code).toBe(0)
    expect(existsSync(path.join(t.work, 'plan.txt'))).toBe(false)
    expect(systemOf()).toContain('# Plan mode')
    expect(toolMessage(1)).toContain(
      'the session is in plan mode, where only read-only tools run, and tool "write" would write',
    )
    expect(toolMessage(2, 1)).toContain('The plan was not approved, so you are still in plan mode')
    const { events } = await readSessionLog(t.home, result.sessionId)
    expect(ofType(events, 'plan/mode').map((e) => e.data)).toEqual([{ active: true }])
    expect(events.findIndex((e) => e.type === 'plan/mode')).toBeLessThan(
      events.findIndex((e) => e.type === 'turn/start'),
    )
  })
})
