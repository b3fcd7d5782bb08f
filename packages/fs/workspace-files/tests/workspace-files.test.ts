import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FileListings, listDirs, listFiles, rankFiles } from '../src/index.ts'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'dsh-workspace-files-'))
  for (const folder of ['src/app', '.git/objects', '.github', 'build'])
    await mkdir(path.join(dir, folder), { recursive: true })
  await writeFile(path.join(dir, '.gitignore'), 'build/\n')
  await writeFile(path.join(dir, 'src/app/main.ts'), '')
  await writeFile(path.join(dir, 'src/domain.ts'), '')
  await writeFile(path.join(dir, '.github/ci.yml'), '')
  await writeFile(path.join(dir, '.git/objects/blob'), '')
  await writeFile(path.join(dir, 'build/out.js'), '')
  await symlink(path.join(dir, 'src'), path.join(dir, 'linked'))
})
afterEach(() => rm(dir, { recursive: true, force: true }))

const options = { maxOutputBytes: 1 << 20, timeoutMs: 10_000 }

describe('listFiles', () => {
  it('lists what git would track: hidden files yes, ignored files and VCS folders no', async () => {
    const { files, truncated } = await listFiles(dir, options)
    expect(files.sort()).toEqual(['.github/ci.yml', '.gitignore', 'src/app/main.ts', 'src/domain.ts'])
    expect(truncated).toBe(false)
  })

  it('cuts a listing past its byte budget and says so', async () => {
    const { truncated } = await listFiles(dir, { ...options, maxOutputBytes: 20 })
    expect(truncated).toBe(true)
  })
})

describe('rankFiles', () => {
  const files = ['src/domain.ts', 'src/app/main.ts', 'docs/main-notes.md', 'lib/m/a/i/n.ts']
  it('puts a file-name start before a name match, a path match and a scattered one', () => {
    expect(rankFiles(files, 'main', 10)).toEqual([
      'src/app/main.ts',
      'docs/main-notes.md',
      'src/domain.ts',
      'lib/m/a/i/n.ts',
    ])
    expect(rankFiles(files, 'n.ts', 10)).toEqual(['lib/m/a/i/n.ts', 'src/domain.ts', 'src/app/main.ts'])
    expect(rankFiles(files, 'zzz', 10)).toEqual([])
  })

  it('without a query gives the shortest paths first, at most limit', () => {
    expect(rankFiles(files, '', 2)).toEqual(['src/domain.ts', 'lib/m/a/i/n.ts'])
  })
})

describe('FileListings', () => {
  it('reuses a listing within cacheMs: a file added meanwhile shows only after it', async () => {
    const listings = new FileListings({ ...options, cacheMs: 60_000 })
    expect((await listings.find(dir, 'new', 10)).files).toEqual([])
    await writeFile(path.join(dir, 'new.txt'), '')
    expect((await listings.find(dir, 'new', 10)).files).toEqual([])
    expect((await new FileListings({ ...options, cacheMs: 0 }).find(dir, 'new', 10)).files).toEqual(['new.txt'])
  })
})

describe('listDirs', () => {
  it('lists sub-folders by name (links to folders too), hidden ones only when asked, with the parent', async () => {
    expect(await listDirs(dir, false)).toEqual({
      path: dir,
      parent: path.dirname(dir),
      dirs: ['build', 'linked', 'src'],
    })
    expect((await listDirs(dir, true)).dirs).toEqual(['.git', '.github', 'build', 'linked', 'src'])
  })

  it('throws for a folder that cannot be read', async () => {
    await expect(listDirs(path.join(dir, 'missing'), false)).rejects.toThrow(/ENOENT/)
  })
})
