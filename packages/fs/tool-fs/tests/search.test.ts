import { execFileSync } from 'node:child_process'
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { SpillStore } from '@dsh/spill'
import { afterEach, describe, expect, it } from 'vitest'
import { scrubbedEnv } from '../src/index.ts'
import { runRipgrep } from '../src/ripgrep.ts'
import { type Setup, setup, text } from './helpers.ts'

let s: Setup
afterEach(async () => {
  await s?.dispose()
})

/** Writes files under the workspace, creating folders. */
async function files(tree: Record<string, string>): Promise<void> {
  for (const [name, content] of Object.entries(tree)) {
    const target = path.join(s.workspace, name)
    await mkdir(path.dirname(target), { recursive: true })
    await writeFile(target, content)
  }
}

const lines = (result: { content: { type: string }[] }) => text(result as never).split('\n')

describe('glob', () => {
  it('finds files by pattern, hidden ones included, honouring .gitignore and skipping .git', async () => {
    s = await setup()
    await files({
      'src/a.ts': '',
      'src/deep/b.ts': '',
      'src/c.js': '',
      '.hidden/d.ts': '',
      'build/e.ts': '',
      '.gitignore': 'build/\n',
      '.git/HEAD.ts': '',
    })
    const all = await s.run('glob', { pattern: '*.ts' })
    expect(all.isError).toBe(false)
    expect(lines(all).sort()).toEqual(['.hidden/d.ts', 'src/a.ts', 'src/deep/b.ts'])
    expect(lines(await s.run('glob', { pattern: 'src/*.ts' }))).toEqual(['src/a.ts'])
    expect(lines(await s.run('glob', { pattern: '**/*.{ts,js}', path: 'src' })).sort()).toEqual([
      'src/a.ts',
      'src/c.js',
      'src/deep/b.ts',
    ])
    expect(lines(await s.run('glob', { pattern: '*.ts', path: path.join(s.workspace, 'src/deep') }))).toEqual([
      'src/deep/b.ts',
    ])
    expect(text(await s.run('glob', { pattern: '*.rs' }))).toBe('No files found')
  })

  it('lists ignored files when configured to', async () => {
    s = await setup({ config: { globIncludeIgnored: true } })
    await files({ 'build/e.ts': '', '.gitignore': 'build/\n' })
    expect(lines(await s.run('glob', { pattern: '*.ts' }))).toEqual(['build/e.ts'])
  })

  it('caps the list and spills the full one when ctx.spill is mounted', async () => {
    s = await setup({ spill: true, config: { globMaxResults: 5 } })
    const tree: Record<string, string> = {}
    for (let i = 0; i < 12; i += 1) tree[`f${String(i).padStart(2, '0')}.txt`] = ''
    await files(tree)
    const result = await s.run('glob', { pattern: '*.txt' })
    const [list, footer] = text(result).split('\n\n')
    expect(list?.split('\n')).toHaveLength(5)
    expect(footer).toMatch(
      /^\(Showing the first 5 of 12 files\. The full output \(\d+ bytes\) is saved at (\S+); page through it with the read tool/,
    )
    const saved = /saved at (\S+);/.exec(footer ?? '')?.[1] as string
    expect(path.dirname(path.dirname(saved))).toBe(s.spillRoot)
    expect((await readFile(saved, 'utf8')).split('\n').sort()).toEqual(Object.keys(tree).sort())
    expect((await stat(saved)).mode & 0o777).toBe(0o600)
    expect(result.meta).toMatchObject({ total: 12, truncated: true, spilled: saved })
    // The model pages through the saved list with read.
    expect(text(await s.run('read', { file_path: saved, limit: 2 }))).toMatch(
      /^ {5}1\tf\d\d\.txt\n {5}2\tf\d\d\.txt\n\n\(Showing lines 1-2 of 12/,
    )
  })

  it('reports a failed spill in the footer instead of failing the call', async () => {
    s = await setup({ config: { globMaxResults: 1 } })
    class BrokenSpill extends SpillStore {
      async save(): Promise<never> {
        throw new Error('disk full')
      }
    }
    await s.root.plugin(BrokenSpill)
    await files({ 'a.txt': '', 'b.txt': '' })
    const result = await s.run('glob', { pattern: '*.txt' })
    expect(result.isError).toBe(false)
    expect(text(result).split('\n\n')[1]).toBe(
      '(Showing the first 1 of 2 files. Saving the full output failed: disk full. Narrow the pattern or the path to see the rest.)',
    )
  })

  it('says how to narrow the search when nothing can be spilled', async () => {
    s = await setup({ config: { globMaxResults: 2 } })
    await files({ 'a.txt': '', 'b.txt': '', 'c.txt': '' })
    const result = await s.run('glob', { pattern: '*.txt' })
    expect(text(result).split('\n\n')[1]).toBe(
      '(Showing the first 2 of 3 files. Narrow the pattern or the path to see the rest.)',
    )
  })

  it('reports bad patterns and paths clearly', async () => {
    s = await setup()
    await files({ 'a.txt': '' })
    expect(text(await s.run('glob', { pattern: '!*.txt' }))).toContain('cannot start with "!"')
    const missing = await s.run('glob', { pattern: '*', path: 'nope' })
    expect(missing.error?.code).toBe('FS_NOT_FOUND')
    expect(text(missing)).toContain('nope does not exist')
    expect((await s.run('glob', { pattern: '*', path: 'a.txt' })).error?.code).toBe('FS_NOT_DIRECTORY')
    const bad = await s.run('glob', { pattern: 'a{b' })
    expect(bad.error?.code).toBe('SEARCH_INVALID_GLOB')
    expect(text(bad)).toContain('glob')
  })

  it('does not follow a symlink out of the searched tree', async () => {
    s = await setup()
    await writeFile(path.join(s.outside, 'secret.ts'), '')
    await symlink(s.outside, path.join(s.workspace, 'out-link'))
    await files({ 'mine.ts': '' })
    expect(lines(await s.run('glob', { pattern: '*.ts' }))).toEqual(['mine.ts'])
  })
})

describe('grep', () => {
  const source = {
    'src/app.ts': 'import x from "y"\nfunction Hello() {\n  return hello\n}\n',
    'src/util.js': 'const hello = 1\n',
    'docs/readme.md': 'Say HELLO\n',
    'dist/out.ts': 'hello from the build\n',
    '.gitignore': 'dist/\n',
  }

  it('shows matching lines with line numbers under a heading per file, honouring .gitignore', async () => {
    s = await setup()
    await files(source)
    const plain = await s.run('grep', { pattern: '(?i)hello' })
    expect(text(plain)).toBe(
      [
        'docs/readme.md',
        '1:Say HELLO',
        '',
        'src/app.ts',
        '2:function Hello() {',
        '3:  return hello',
        '',
        'src/util.js',
        '1:const hello = 1',
      ].join('\n'),
    )
    expect(plain.meta).toMatchObject({ files: 3, matches: 4 })
    expect(text(await s.run('grep', { pattern: 'hello', include: '*.ts' }))).toBe('src/app.ts\n3:  return hello')
    expect(text(await s.run('grep', { pattern: 'hello', path: 'src/util.js' }))).toBe('src/util.js\n1:const hello = 1')
    expect(text(await s.run('grep', { pattern: 'absent-word' }))).toBe('No matches found')

    await files({ 'far.txt': 'hit\na\nb\nc\nd\nhit\n' })
    expect(text(await s.run('grep', { pattern: 'hit', path: 'far.txt' }))).toBe(
      ['far.txt', '1:hit', '--', '6:hit'].join('\n'),
    )
  })

  it('passes patterns that look like flags as patterns', async () => {
    s = await setup()
    await files({ 'flags.txt': 'use --pre=cat here\n' })
    expect(text(await s.run('grep', { pattern: '--pre=cat' }))).toBe('flags.txt\n1:use --pre=cat here')
  })

  it('caps results at grepMaxResults and spills the full output', async () => {
    s = await setup({ spill: true, config: { grepMaxResults: 10 } })
    const big = Array.from({ length: 40 }, (_, i) => `match line ${i + 1}`).join('\n')
    await files({ 'big.txt': `${big}\n` })
    const result = await s.run('grep', { pattern: 'match' })
    const [body, footer] = text(result).split('\n\n')
    expect(body?.split('\n')).toEqual([
      'big.txt',
      ...Array.from({ length: 10 }, (_, i) => `${i + 1}:match line ${i + 1}`),
    ])
    expect(footer).toMatch(
      /^\(Showing the first 10 of 40 result lines\. The full output \(\d+ bytes\) is saved at \S+; page through it with the read tool/,
    )
    const saved = result.meta && (result.meta as { spilled: string }).spilled
    expect(typeof saved).toBe('string')
    const full = await readFile(saved as string, 'utf8')
    expect(full.split('\n')).toHaveLength(41)
    expect(full).toContain('40:match line 40')
    expect(path.dirname(path.dirname(saved as string))).toBe(s.spillRoot)
  })

  it('stops a runaway search at the raw output limit', async () => {
    s = await setup({ config: { grepMaxResults: 3, searchMaxOutputBytes: 2000 } })
    await files({ 'many.txt': `${Array.from({ length: 500 }, () => 'needle').join('\n')}\n` })
    const result = await s.run('grep', { pattern: 'needle' })
    expect(result.isError).toBe(false)
    const parts = text(result).split('\n\n')
    expect(parts[0]).toBe('many.txt\n1:needle\n2:needle\n3:needle')
    expect(parts[1]).toMatch(
      /^\(Showing the first 3 of \d+ result lines\. Narrow the pattern, path or include glob to see the rest\.\)$/,
    )
    expect(parts[2]).toBe(
      "(ripgrep's output passed 2000 bytes, so the search was stopped and the results are incomplete. Narrow the pattern, path or include glob.)",
    )
  })

  it('reports a pattern that does not compile and a missing path clearly', async () => {
    s = await setup()
    await files({ 'a.txt': 'x\n' })
    const regex = await s.run('grep', { pattern: 'foo(bar' })
    expect(regex.error?.code).toBe('SEARCH_INVALID_PATTERN')
    expect(text(regex)).toContain('not a valid regular expression')
    expect(text(regex)).toContain('unclosed group')
    expect((await s.run('grep', { pattern: 'x', path: 'missing' })).error?.code).toBe('FS_NOT_FOUND')
    expect((await s.run('grep', { pattern: 'a\u0000b' })).error?.code).toBe('SEARCH_INVALID_PATTERN')
    expect((await s.run('grep', { pattern: 'x', include: '*\u0000' })).error?.code).toBe('SEARCH_INVALID_GLOB')
    expect((await s.run('glob', { pattern: '*\u0000' })).error?.code).toBe('SEARCH_INVALID_GLOB')
  })
})

describe('spawned ripgrep', () => {
  it('is killed and waited for when the call is aborted', async () => {
    s = await setup()
    // rg blocks reading a named pipe nobody writes to, so only the abort can end it.
    const fifo = path.join(s.workspace, 'pipe')
    execFileSync('mkfifo', [fifo])
    const controller = new AbortController()
    const running = runRipgrep(['--regexp', 'x', '--', fifo], {
      cwd: s.workspace,
      signal: controller.signal,
      maxOutputBytes: 1000,
    })
    controller.abort(new Error('call cancelled'))
    await expect(running).rejects.toThrow('call cancelled')
  })

  it('gets an environment without secrets or dsh settings', () => {
    const env = scrubbedEnv({
      PATH: '/bin',
      HOME: '/home/u',
      OPENAI_API_KEY: 'k',
      GITHUB_TOKEN: 't',
      DB_PASSWORD: 'p',
      MY_SECRET: 's',
      DSH_HOME: '/h',
    })
    expect(env).toEqual({ PATH: '/bin', HOME: '/home/u' })
  })
})
