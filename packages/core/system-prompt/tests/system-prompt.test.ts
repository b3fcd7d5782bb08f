import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as systemPrompt from '../src/index.ts'
import { PromptState, projectFolders } from '../src/index.ts'

let base: string
let home: string
let project: string
let workspace: string

beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'dsh-system-prompt-')))
  home = path.join(base, 'home')
  project = path.join(base, 'project')
  workspace = path.join(project, 'packages', 'app')
  await mkdir(path.join(project, '.git'), { recursive: true })
  await mkdir(workspace, { recursive: true })
})

afterEach(async () => {
  await rm(base, { recursive: true, force: true })
})

describe('literal sections', () => {
  it('are rendered as written; other sections fill {{variables}}', async () => {
    const root = new Context()
    await root.plugin(systemPrompt, { persona: 'Working in {{cwd}}.', guidance: '', timeZone: 'UTC' })
    root.systemPrompt.section(root, {
      name: 'user:text',
      order: 10,
      literal: true,
      text: 'Use ${{ secrets.TOKEN }} and {{unknown}}.',
    })
    expect(await root.systemPrompt.render({ sessionId: 's', cwd: '/w', model: 'm', provider: 'p' })).toBe(
      'Working in /w.\n\nUse ${{ secrets.TOKEN }} and {{unknown}}.',
    )
    await root.fiber.dispose()
  })
})

const target = { sessionId: 's', cwd: '/w', model: 'm', provider: 'p' }

describe('a session keeps its prompt', () => {
  async function setup() {
    const root = new Context()
    await root.plugin(systemPrompt, {
      persona: 'Persona on {{date}} ({{timeZone}}).',
      guidance: '',
      timeZone: 'Asia/Tokyo',
    })
    root.systemPrompt.now = () => new Date('2030-01-01T14:00:00Z') // 23:00 in Tokyo
    let renders = 0
    let rules = 'RULES-ONE'
    root.systemPrompt.section(root, {
      name: 'volatile',
      order: 50,
      text: () => `section rendered ${++renders} times`,
    })
    root.systemPrompt.section(root, {
      name: 'rules',
      order: 200,
      literal: true,
      text: () => rules,
      refresh: () => rules,
      reason: 'instructions changed',
    })
    return { root, setRules: (text: string) => (rules = text), renders: () => renders }
  }

  it('renders each section once per session and reuses the text byte for byte', async () => {
    const { root, renders } = await setup()
    const state = new PromptState()
    const first = await root.systemPrompt.compose(target, state)
    expect(first).toEqual({
      text: 'Persona on 2030-01-01 (Asia/Tokyo).\n\nsection rendered 1 times\n\nRULES-ONE',
      changes: [],
    })
    expect(await root.systemPrompt.compose(target, state)).toEqual(first)
    expect(renders()).toBe(1)
    // Another session renders its own.
    expect((await root.systemPrompt.compose({ ...target, sessionId: 't' }, new PromptState())).text).toContain(
      '2 times',
    )
    await root.fiber.dispose()
  })

  it('renders a section again when its refresh key changes, and says why', async () => {
    const { root, setRules, renders } = await setup()
    const state = new PromptState()
    await root.systemPrompt.compose(target, state)
    setRules('RULES-TWO')
    const next = await root.systemPrompt.compose(target, state)
    expect(next.text).toBe('Persona on 2030-01-01 (Asia/Tokyo).\n\nsection rendered 1 times\n\nRULES-TWO')
    expect(next.changes).toEqual([{ section: 'rules', reason: 'instructions changed' }])
    expect(renders()).toBe(1)
    await root.fiber.dispose()
  })

  it('renders everything again on a new calendar day in its time zone', async () => {
    const { root, renders } = await setup()
    const state = new PromptState()
    await root.systemPrompt.compose(target, state)
    root.systemPrompt.now = () => new Date('2030-01-01T14:59:00Z')
    expect((await root.systemPrompt.compose(target, state)).changes).toEqual([])
    root.systemPrompt.now = () => new Date('2030-01-01T15:00:00Z') // midnight in Tokyo
    const next = await root.systemPrompt.compose(target, state)
    expect(next.text).toBe('Persona on 2030-01-02 (Asia/Tokyo).\n\nsection rendered 2 times\n\nRULES-ONE')
    expect(next.changes.map((c) => c.reason)).toEqual(['new day', 'new day', 'new day'])
    expect(renders()).toBe(2)
    await root.fiber.dispose()
  })

  it('says when a section went away', async () => {
    const { root } = await setup()
    const state = new PromptState()
    const fork = root.plugin({
      name: 'extra',
      inject: ['systemPrompt'],
      apply: (ctx: Context) => {
        ctx.systemPrompt.section(ctx, { name: 'extra', order: 300, text: 'EXTRA' })
      },
    })
    await fork
    expect((await root.systemPrompt.compose(target, state)).text).toContain('EXTRA')
    await fork.dispose()
    const next = await root.systemPrompt.compose(target, state)
    expect(next.text).not.toContain('EXTRA')
    expect(next.changes).toEqual([{ section: 'extra', reason: 'section removed' }])
    await root.fiber.dispose()
  })

  it('refuses a time zone that is not one, naming it', async () => {
    expect(
      () => new systemPrompt.SystemPrompt(new Context(), { persona: '', guidance: '', timeZone: 'Mars/Olympus' }),
    ).toThrow('timeZone "Mars/Olympus" is not an IANA time zone')
  })
})

describe('projectFolders', () => {
  it('stops at the nearest folder with .git', () => {
    expect(projectFolders(workspace, home)).toEqual({
      root: project,
      folders: [project, path.join(project, 'packages'), workspace],
    })
  })

  it('without .git, stops below the home folder', async () => {
    const loose = path.join(base, 'loose', 'deep')
    await mkdir(loose, { recursive: true })
    expect(projectFolders(loose, base)).toEqual({ root: undefined, folders: [path.join(base, 'loose'), loose] })
    expect(projectFolders(base, base)).toEqual({ root: undefined, folders: [base] })
  })

  it('without .git and outside the home folder, goes up to the filesystem root', async () => {
    const loose = path.join(base, 'loose')
    await mkdir(loose, { recursive: true })
    const { root: found, folders } = projectFolders(loose, path.join(base, 'elsewhere'))
    expect(found).toBeUndefined()
    expect(folders[0]).toBe(path.parse(loose).root)
    expect(folders.at(-1)).toBe(loose)
  })
})
