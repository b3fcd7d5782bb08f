import { mkdir, rename, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type Setup, setup, text } from './helpers.ts'

let s: Setup | undefined

afterEach(async () => {
  await s?.dispose()
  s = undefined
})

const KEY = 'sk-test-0123456789abcdef'

/** A workspace that holds a dsh home (as when dsh runs from its own home), with the secrets configured as the bundles do. */
async function withHome(): Promise<{ s: Setup; home: string }> {
  const current = await setup({
    fs: (base) => {
      const home = path.join(base, 'ws', 'dsh-home')
      return {
        secretFiles: ['.credentials.yaml', '.env', 'profiles/*/.credentials.yaml', 'profiles/*/.env'].map((p) =>
          path.join(home, p),
        ),
      }
    },
  })
  s = current
  const home = path.join(current.workspace, 'dsh-home')
  await mkdir(path.join(home, 'profiles', 'web'), { recursive: true })
  await writeFile(path.join(home, '.credentials.yaml'), `refs:\n  DEEPSEEK_API_KEY: ${KEY}\n`)
  await writeFile(path.join(home, '.env'), `DEEPSEEK_API_KEY=${KEY}\n`)
  await writeFile(path.join(home, 'profiles', 'web', '.env'), `OTHER=${KEY}\n`)
  await writeFile(path.join(home, 'settings.yaml'), 'note: sk-test is mentioned here\n')
  return { s: current, home }
}

describe("dsh's own secrets", () => {
  it('read, write and edit refuse them, also through a symlink, saying what they are', async () => {
    const { s, home } = await withHome()
    await symlink(path.join(home, '.credentials.yaml'), path.join(s.workspace, 'harmless.txt'))
    for (const target of [
      path.join(home, '.credentials.yaml'),
      'dsh-home/.env',
      'dsh-home/profiles/web/.env',
      'harmless.txt',
    ]) {
      const read = await s.run('read', { file_path: target })
      expect(read.error?.code).toBe('FS_DENIED')
      expect(text(read)).toMatch(/dsh's own secret store/)
      expect(text(read)).not.toContain(KEY)
      expect((await s.run('write', { file_path: target, content: 'x' })).error?.code).toBe('FS_DENIED')
      expect((await s.run('edit', { file_path: target, old_string: 'sk', new_string: 'x' })).error?.code).toBe(
        'FS_DENIED',
      )
    }
  })

  it('grep and glob over a folder holding them neither list nor return them', async () => {
    const { s } = await withHome()
    for (const args of [{ pattern: 'sk-test' }, { pattern: 'sk-test', path: 'dsh-home' }]) {
      const found = text(await s.run('grep', args))
      expect(found).not.toContain(KEY)
      expect(found).not.toMatch(/\.credentials\.yaml|\.env/)
      expect(found).toContain('settings.yaml')
    }
    const listed = text(await s.run('glob', { pattern: '**/.*' }))
    expect(listed).not.toMatch(/\.credentials\.yaml|\.env/)
    const named = text(await s.run('glob', { pattern: '.credentials.yaml', path: 'dsh-home' }))
    expect(named).toBe('No files found')
    expect((await s.run('grep', { pattern: 'sk', path: 'dsh-home/.credentials.yaml' })).error?.code).toBe('FS_DENIED')
  })

  it('ls leaves them out of the tree', async () => {
    const { s } = await withHome()
    const tree = text(await s.run('ls', { path: 'dsh-home' }))
    expect(tree).toContain('settings.yaml')
    expect(tree).toContain('profiles/')
    expect(tree).not.toMatch(/\.credentials\.yaml|\.env/)
  })
})

describe('search roots', () => {
  it('search a folder reached through a symlink inside the workspace', async () => {
    s = await setup()
    await mkdir(path.join(s.workspace, 'src'))
    await writeFile(path.join(s.workspace, 'src', 'a.ts'), 'export const needle = 1\n')
    await symlink('src', path.join(s.workspace, 'alias'))
    expect(text(await s.run('grep', { pattern: 'needle', path: 'alias' }))).toBe(
      'alias/a.ts\n1:export const needle = 1',
    )
    expect(text(await s.run('glob', { pattern: '*.ts', path: 'alias' }))).toBe('alias/a.ts')
    expect(text(await s.run('ls', { path: 'alias' }))).toContain('a.ts')
  })

  it('ls does not follow a folder swapped for a symlink while it lists', async () => {
    const current = await setup()
    s = current
    const { workspace, outside } = current
    await mkdir(path.join(workspace, 'sub', 'inner'), { recursive: true })
    await writeFile(path.join(outside, 'elsewhere.txt'), 'x')
    // Swap `sub` for a symlink out of the workspace once the listing has resolved it, before it reads it.
    let swapped = false
    const sub = path.join(workspace, 'sub')
    await current.root.plugin((ctx: import('@dsh/cordis').Context) => {
      ctx.on('fs/read', async (request, next) => {
        if (!swapped && request.operation === 'readdir' && request.path.real === sub) {
          swapped = true
          await rename(sub, path.join(workspace, 'sub-old'))
          await symlink(outside, sub)
        }
        return next()
      })
    })
    const tree = text(await current.run('ls', {}))
    expect(swapped).toBe(true)
    expect(tree).toContain('(cannot list: path changed)')
    expect(tree).not.toContain('elsewhere.txt')
  })
})
