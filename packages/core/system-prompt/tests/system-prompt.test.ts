import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as systemPrompt from '../src/index.ts'
import { projectFolders } from '../src/index.ts'

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
    await root.plugin(systemPrompt, { persona: 'Working in {{cwd}}.' })
    root.systemPrompt.section(root, {
      name: 'user:text',
      order: 10,
      literal: true,
      text: 'Use ${{ secrets.TOKEN }} and {{unknown}}.',
    })
    expect(root.systemPrompt.render({ sessionId: 's', cwd: '/w', model: 'm', provider: 'p' })).toBe(
      'Working in /w.\n\nUse ${{ secrets.TOKEN }} and {{unknown}}.',
    )
    await root.fiber.dispose()
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
