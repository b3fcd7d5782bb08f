import { mkdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import { type Session, SessionStore } from '@dsh/session'
import * as systemPrompt from '@dsh/system-prompt'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as instructions from '../src/index.ts'
import type { InstructionsConfig } from '../src/index.ts'
import { collectWarnings, tempProject } from '@dsh/testkit'

let base: string
let home: string
let project: string
let workspace: string
let root: Context
let warnings: string[]

beforeEach(async () => {
  ;({ base, home, project, workspace } = await tempProject('dsh-instructions-', 'packages', 'app'))
  root = new Context()
  warnings = collectWarnings(root)
  await root.plugin(SessionStore)
  await root.plugin(systemPrompt, { persona: '', guidance: '', timeZone: '' })
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(base, { recursive: true, force: true })
})

async function mount(config: Partial<InstructionsConfig> = {}) {
  const fiber = root.plugin(instructions, { homeFile: path.join(home, 'AGENTS.md'), ...config } as InstructionsConfig)
  await fiber
  return fiber
}

async function render(session: Session): Promise<string> {
  return root.systemPrompt.render({ sessionId: session.id, cwd: session.meta.cwd, model: 'm', provider: 'p' })
}

function startTurn(session: Session, turn: number) {
  if (turn > 1) session.append('turn/end', { turn: turn - 1, reason: 'completed' })
  session.append('turn/start', { turn })
}

describe('AGENTS.md instructions', () => {
  it('loads the user-wide file, then the project from its root down to the workspace, outermost first', async () => {
    await writeFile(path.join(base, 'AGENTS.md'), 'ABOVE-THE-PROJECT')
    await writeFile(path.join(home, 'AGENTS.md'), 'HOME-RULES')
    await writeFile(path.join(project, 'AGENTS.md'), 'PROJECT-RULES')
    await writeFile(path.join(workspace, 'AGENTS.md'), 'APP-RULES')
    await mount()
    const session = root.sessions.create({ cwd: workspace })
    const prompt = await render(session)
    expect(prompt).toContain('# Instructions from AGENTS.md files')
    expect(prompt).not.toContain('ABOVE-THE-PROJECT')
    const order = ['HOME-RULES', 'PROJECT-RULES', 'APP-RULES'].map((text) => prompt.indexOf(text))
    expect(order.every((at) => at > 0)).toBe(true)
    expect([...order].sort((a, b) => a - b)).toEqual(order)
    expect(prompt).toContain(`<agents-md path="${path.join(home, 'AGENTS.md')}" scope="user">`)
    expect(prompt).toContain(`<agents-md path="${path.join(workspace, 'AGENTS.md')}" scope="project">`)
    expect(warnings).toEqual([])
  })

  it('leaves the section out when there is no instruction file, and removes it with the plugin', async () => {
    const fiber = await mount()
    const session = root.sessions.create({ cwd: workspace })
    expect(await render(session)).toBe('')
    await writeFile(path.join(project, 'AGENTS.md'), 'PROJECT-RULES')
    const fresh = root.sessions.create({ cwd: workspace })
    expect(await render(fresh)).toContain('PROJECT-RULES')
    await fiber.dispose()
    expect(await render(root.sessions.create({ cwd: workspace }))).toBe('')
  })

  it('reads the files again at each turn, not at each step', async () => {
    const file = path.join(project, 'AGENTS.md')
    await writeFile(file, 'VERSION-ONE')
    await mount()
    const session = root.sessions.create({ cwd: workspace })
    startTurn(session, 1)
    expect(await render(session)).toContain('VERSION-ONE')
    await writeFile(file, 'VERSION-TWO')
    expect(await render(session)).toContain('VERSION-ONE')
    startTurn(session, 2)
    expect(await render(session)).toContain('VERSION-TWO')
    expect(await render(session)).not.toContain('VERSION-ONE')
  })

  it('cuts a huge file at maxFileBytes on a character boundary and says so in the prompt', async () => {
    const file = path.join(project, 'AGENTS.md')
    await writeFile(file, `START${'é'.repeat(100_000)}END`)
    await mount({ maxFileBytes: 1001 })
    const prompt = await render(root.sessions.create({ cwd: workspace }))
    expect(prompt).toContain('START')
    expect(prompt).not.toContain('END')
    expect(prompt).not.toContain('\uFFFD')
    expect(prompt).toContain('[cut: this file has 200008 bytes; only the first 1001 are shown]')
    expect(Buffer.byteLength(prompt)).toBeLessThan(2000)
    expect(warnings).toEqual([
      expect.stringContaining(`${file} has 200008 bytes; only the first 1001 reach the prompt`),
    ])
  })

  it('shares maxTotalBytes across the files, in order', async () => {
    await writeFile(path.join(home, 'AGENTS.md'), 'H'.repeat(600))
    await writeFile(path.join(project, 'AGENTS.md'), 'P'.repeat(600))
    await writeFile(path.join(workspace, 'AGENTS.md'), 'W'.repeat(600))
    await mount({ maxFileBytes: 1000, maxTotalBytes: 1000 })
    const prompt = await render(root.sessions.create({ cwd: workspace }))
    expect(prompt).toContain('H'.repeat(600))
    expect(prompt).toContain(`${'P'.repeat(400)}\n[cut: this file has 600 bytes; only the first 400 are shown]`)
    expect(prompt).not.toContain('WWW')
    expect(prompt).toContain(
      '[not loaded: the size limit for all instruction files together was reached before this file (600 bytes)]',
    )
  })

  it('reports a file that is not UTF-8 once, notes it in the section, and keeps the others', async () => {
    const bad = path.join(workspace, 'AGENTS.md')
    await writeFile(path.join(project, 'AGENTS.md'), 'PROJECT-RULES')
    await writeFile(bad, Buffer.from([0x52, 0x55, 0x4c, 0x45, 0xff, 0xfe, 0x00, 0xc3]))
    await mount()
    const session = root.sessions.create({ cwd: workspace })
    startTurn(session, 1)
    const prompt = await render(session)
    expect(prompt).toContain('PROJECT-RULES')
    expect(prompt).toContain(
      `<agents-md path="${bad}" scope="project">\n[not loaded: it is not valid UTF-8 text]\n</agents-md>`,
    )
    startTurn(session, 2)
    await render(session)
    expect(warnings).toEqual([`${bad} was not loaded into the prompt: it is not valid UTF-8 text`])
  })

  it('reports an unreadable entry (a folder named AGENTS.md) and goes on', async () => {
    await mkdir(path.join(workspace, 'AGENTS.md'))
    await writeFile(path.join(project, 'AGENTS.md'), 'PROJECT-RULES')
    await mount()
    const prompt = await render(root.sessions.create({ cwd: workspace }))
    expect(prompt).toContain('PROJECT-RULES')
    expect(prompt).toContain('[not loaded:')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain(path.join(workspace, 'AGENTS.md'))
  })

  it('passes {{braces}} in a file through untouched', async () => {
    await writeFile(path.join(project, 'AGENTS.md'), 'Deploy with ${{ secrets.TOKEN }} and {{unknown}}.')
    await mount()
    expect(await render(root.sessions.create({ cwd: workspace }))).toContain(
      'Deploy with ${{ secrets.TOKEN }} and {{unknown}}.',
    )
  })

  it('loads every configured file name in each folder', async () => {
    await writeFile(path.join(project, 'AGENTS.md'), 'AGENTS-RULES')
    await writeFile(path.join(project, 'CLAUDE.md'), 'CLAUDE-RULES')
    await mount({ fileNames: ['AGENTS.md', 'CLAUDE.md'] })
    const prompt = await render(root.sessions.create({ cwd: workspace }))
    expect(prompt.indexOf('AGENTS-RULES')).toBeLessThan(prompt.indexOf('CLAUDE-RULES'))
  })
})
