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
    expect(text(await s.run('read', { path: saved, limit: 2 }))).toMatch(
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

  it('lists matching files by default, honouring .gitignore', async () => {
    s = await setup()
    await files(source)
    const result = await s.run('grep', { pattern: 'hello' })
    expect(lines(result)).toEqual(['src/app.ts', 'src/util.js'])
    expect(lines(await s.run('grep', { pattern: 'hello', case_insensitive: true }))).toEqual([
      'docs/readme.md',
      'src/app.ts',
      'src/util.js',
    ])
    expect(lines(await s.run('grep', { pattern: 'hello', glob: '*.ts' }))).toEqual(['src/app.ts'])
    expect(lines(await s.run('grep', { pattern: 'hello', type: 'js' }))).toEqual(['src/util.js'])
    expect(lines(await s.run('grep', { pattern: 'hello', path: 'src/util.js' }))).toEqual(['src/util.js'])
    expect(text(await s.run('grep', { pattern: 'absent-word' }))).toBe('No matches found')
  })

  it('shows matching lines with line numbers and context in content mode', async () => {
    s = await setup()
    await files(source)
    const plain = await s.run('grep', { pattern: 'hello', output_mode: 'content', case_insensitive: true })
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

    await files({ 'far.txt': 'hit\na\nb\nc\nd\nhit\n' })
    const context = await s.run('grep', { pattern: 'hit', path: 'far.txt', output_mode: 'content', context: 1 })
    expect(text(context)).toBe(['far.txt', '1:hit', '2-a', '--', '5-d', '6:hit'].join('\n'))
  })

  it('counts matching lines per file', async () => {
    s = await setup()
    await files({ 'a.txt': 'x\nx\ny\n', 'b.txt': 'x\n', 'c.txt': 'y\n' })
    expect(text(await s.run('grep', { pattern: 'x', output_mode: 'count' }))).toBe(
      'a.txt:2\nb.txt:1\n\n(3 matching lines in 2 files.)',
    )
  })

  it('passes patterns that look like flags as patterns', async () => {
    s = await setup()
    await files({ 'flags.txt': 'use --pre=cat here\n' })
    expect(text(await s.run('grep', { pattern: '--pre=cat', output_mode: 'content' }))).toBe(
      'flags.txt\n1:use --pre=cat here',
    )
  })

  it('caps results at head_limit and spills the full output', async () => {
    s = await setup({ spill: true })
    const big = Array.from({ length: 40 }, (_, i) => `match line ${i + 1}`).join('\n')
    await files({ 'big.txt': `${big}\n` })
    const result = await s.run('grep', { pattern: 'match', output_mode: 'content', head_limit: 10 })
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

  it('uses its default cap without head_limit, and stops a runaway search at the raw output limit', async () => {
    s = await setup({ config: { grepMaxResults: 3, searchMaxOutputBytes: 2000 } })
    await files({ 'many.txt': `${Array.from({ length: 500 }, () => 'needle').join('\n')}\n` })
    const result = await s.run('grep', { pattern: 'needle', output_mode: 'content' })
    expect(result.isError).toBe(false)
    const parts = text(result).split('\n\n')
    expect(parts[0]).toBe('many.txt\n1:needle\n2:needle\n3:needle')
    expect(parts[1]).toMatch(
      /^\(Showing the first 3 of \d+ result lines\. Narrow the pattern, path or glob, or raise head_limit, to see the rest\.\)$/,
    )
    expect(parts[2]).toBe(
      "(ripgrep's output passed 2000 bytes, so the search was stopped and the results are incomplete. Narrow the pattern, path or glob.)",
    )
  })

  it('reports a pattern that does not compile, an unknown type and a missing path clearly', async () => {
    s = await setup()
    await files({ 'a.txt': 'x\n' })
    const regex = await s.run('grep', { pattern: 'foo(bar' })
    expect(regex.error?.code).toBe('SEARCH_INVALID_PATTERN')
    expect(text(regex)).toContain('not a valid regular expression')
    expect(text(regex)).toContain('unclosed group')
    const type = await s.run('grep', { pattern: 'x', type: 'nosuchtype' })
    expect(type.error?.code).toBe('SEARCH_INVALID_TYPE')
    expect(text(type)).toContain('nosuchtype')
    expect((await s.run('grep', { pattern: 'x', path: 'missing' })).error?.code).toBe('FS_NOT_FOUND')
    expect((await s.run('grep', { pattern: 'a\u0000b' })).error?.code).toBe('SEARCH_INVALID_PATTERN')
    expect((await s.run('grep', { pattern: 'x', glob: '*\u0000' })).error?.code).toBe('SEARCH_INVALID_GLOB')
    expect((await s.run('glob', { pattern: '*\u0000' })).error?.code).toBe('SEARCH_INVALID_GLOB')
    const context = await s.run('grep', { pattern: 'x', context: 2 })
    expect(context.error?.code).toBe('INVALID_ARGUMENTS')
    expect(text(context)).toContain('context only applies to output_mode "content"')
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
