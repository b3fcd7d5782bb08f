import { mkdir, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Context } from '@dsh/cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { type Setup, setup, text } from './helpers.ts'

let s: Setup
afterEach(async () => {
  await s?.dispose()
})

async function files(names: string[]): Promise<void> {
  for (const name of names) {
    const target = path.join(s.workspace, name)
    if (name.endsWith('/')) {
      await mkdir(target, { recursive: true })
      continue
    }
    await mkdir(path.dirname(target), { recursive: true })
    await writeFile(target, '')
  }
}

describe('ls', () => {
  it('shows a tree with directories marked, folders first, default ignores left out', async () => {
    s = await setup()
    await files([
      'src/index.ts',
      'src/lib/util.ts',
      'README.md',
      'empty/',
      'node_modules/pkg/index.js',
      '.git/HEAD',
      '.env',
    ])
    await symlink(s.outside, path.join(s.workspace, 'out-link'))
    const result = await s.run('ls', {})
    expect(result.isError).toBe(false)
    expect(text(result)).toBe(
      [
        './',
        '  empty/',
        '  src/',
        '    lib/',
        '      util.ts',
        '    index.ts',
        '  .env',
        '  README.md',
        '  out-link@',
      ].join('\n'),
    )
    expect(text(await s.run('ls', { path: 'src' }))).toBe(['src/', '  lib/', '    util.ts', '  index.ts'].join('\n'))
    expect(text(await s.run('ls', { path: 'empty' }))).toBe('empty/\n  (empty)')
  })

  it('stops at the depth limit and marks the folders it did not open', async () => {
    s = await setup({ config: { lsMaxDepth: 2 } })
    await files(['a/b/c/d.txt', 'a/top.txt'])
    expect(text(await s.run('ls', {}))).toBe(['./', '  a/', '    b/ …', '    top.txt'].join('\n'))
  })

  it('shows shallow entries first when the entry budget runs out', async () => {
    s = await setup({ config: { lsMaxEntries: 4 } })
    await files(['one/x1', 'one/x2', 'one/x3', 'two/y1', 'z.txt'])
    const result = await s.run('ls', {})
    expect(text(result)).toBe(
      [
        './',
        '  one/',
        '    x1',
        '    … 2 more entries not shown',
        '  two/',
        '    … 1 more entry not shown',
        '  z.txt',
        '',
        '(Showing 4 entries. List a subdirectory, or use glob, to see more.)',
      ].join('\n'),
    )
    expect(result.meta).toMatchObject({ entries: 4, truncated: true })
  })

  it('leaves out what ignore names, by name or relative path', async () => {
    s = await setup()
    await files(['dist/bundle.js', 'src/app.ts', 'src/app.test.ts', 'logs/a.log', 'keep.log'])
    expect(text(await s.run('ls', { ignore: ['dist', '*.test.ts', 'logs/*.log'] }))).toBe(
      ['./', '  logs/', '  src/', '    app.ts', '  keep.log'].join('\n'),
    )
  })

  it('refuses files and missing paths, and reports folders it may not list', async () => {
    s = await setup()
    await files(['file.txt', 'private/secret.txt', 'public/ok.txt'])
    expect((await s.run('ls', { path: 'file.txt' })).error?.code).toBe('FS_NOT_DIRECTORY')
    const missing = await s.run('ls', { path: 'nowhere' })
    expect(missing.error?.code).toBe('FS_NOT_FOUND')
    expect(text(missing)).toContain('nowhere does not exist')

    await s.root.plugin((ctx: Context) => {
      ctx.on('fs/read', (request, next) =>
        request.path.real.endsWith(`${path.sep}private`) ? { kind: 'deny', reason: 'private folder' } : next(),
      )
    })
    expect(text(await s.run('ls', {}))).toBe(
      [
        './',
        '  private/',
        '    (cannot list: access denied: private folder)',
        '  public/',
        '    ok.txt',
        '  file.txt',
      ].join('\n'),
    )
    const denied = await s.run('ls', { path: 'private' })
    expect(denied.error?.code).toBe('FS_DENIED')
  })
})
