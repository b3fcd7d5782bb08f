import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import * as fsPlugin from '@dsh/fs'
import * as tools from '@dsh/tools'
import type { ToolResult, ToolRunOptions, ToolsConfig } from '@dsh/tools'
import { disposeTestRoot, mountPlugin } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as fsTools from '../src/index.ts'
import type { FsToolsConfig } from '../src/index.ts'

let root: Context
let dir: string
let session: ToolRunOptions
let calls = 0

beforeEach(async () => {
  root = new Context()
  dir = await mkdtemp(join(tmpdir(), 'dsh-tool-fs-'))
  session = { signal: new AbortController().signal, cwd: dir, sessionId: 'fs-session', sessionState: new Map() }
  await root.plugin(tools, {} as ToolsConfig)
  await root.plugin(fsPlugin, {})
})

afterEach(() => disposeTestRoot(root, dir))

const boot = (config: Partial<FsToolsConfig> = {}) => mountPlugin(root, fsTools, config)

async function run(
  name: string,
  args: Record<string, unknown>,
  options: ToolRunOptions = session,
): Promise<ToolResult> {
  calls += 1
  return root.tools.execute({ callId: `c${calls}` as ToolCallId, name, arguments: JSON.stringify(args) }, options)
}

function text(result: ToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}

describe('plugin', () => {
  it('registers the file tools, and removes them when disposed', async () => {
    const fiber = await boot()
    expect(root.tools.list().map((tool) => tool.name)).toEqual([
      'edit',
      'glob',
      'grep',
      'ls',
      'read',
      'read_image',
      'write',
    ])
    expect(root.tools.get('read')?.readOnly).toBe(true)
    expect(root.tools.get('write')?.readOnly).toBeFalsy()
    expect(root.tools.isConcurrencySafe('read', '{"file_path":"a"}')).toBe(true)
    expect(root.tools.isConcurrencySafe('write', '{"file_path":"a","content":""}')).toBe(false)
    expect(root.tools.isConcurrencySafe('edit', '{"file_path":"a","old_string":"x","new_string":"y"}')).toBe(false)
    await fiber.dispose()
    expect(root.tools.list()).toEqual([])
  })

  it('registers only the tools named in `tools`', async () => {
    await boot({ tools: ['read', 'write', 'edit'] })
    expect(root.tools.list().map((tool) => tool.name)).toEqual(['edit', 'read', 'write'])
  })
})

describe('read', () => {
  it('numbers lines like cat -n, resolving relative paths against the workspace', async () => {
    await boot()
    await writeFile(join(dir, 'a.txt'), 'alpha\nbeta\r\n\ngamma')
    const result = await run('read', { file_path: 'a.txt' })
    expect(result.isError).toBe(false)
    expect(text(result)).toBe('     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma')
    expect(text(await run('read', { file_path: join(dir, 'a.txt') }))).toBe(text(result))
  })

  it('pages with offset and limit and says how to continue', async () => {
    await boot()
    await writeFile(join(dir, 'n.txt'), `${Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n')}\n`)
    const page = text(await run('read', { file_path: 'n.txt', offset: 3, limit: 2 }))
    expect(page).toBe('     3\tline 3\n     4\tline 4\n\n(Showing lines 3-4 of 10. Use offset=5 to continue.)')
    const tail = text(await run('read', { file_path: 'n.txt', offset: 9 }))
    expect(tail).toBe('     9\tline 9\n    10\tline 10\n\n(End of file: 10 lines.)')
    const past = await run('read', { file_path: 'n.txt', offset: 11 })
    expect(past.error?.code).toBe('FS_OFFSET_OUT_OF_RANGE')
    expect(text(past)).toContain('has 10 lines')
  })

  it('shows 2000 lines by default and refuses a larger limit', async () => {
    await boot({ maxReadBytes: 1_000_000 })
    await writeFile(join(dir, 'big.txt'), Array.from({ length: 2500 }, (_, i) => `${i + 1}`).join('\n'))
    const body = text(await run('read', { file_path: 'big.txt' }))
    expect(body.split('\n').filter((line) => /^\s+\d+\t/.test(line))).toHaveLength(2000)
    expect(body).toContain('(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)')
    const tooMany = await run('read', { file_path: 'big.txt', limit: 2001 })
    expect(tooMany.error?.code).toBe('INVALID_ARGUMENTS')
    expect(text(tooMany)).toContain('limit:')
  })

  it('cuts long lines and caps the total size', async () => {
    await boot({ maxLineLength: 10, maxReadBytes: 70 })
    await writeFile(join(dir, 'wide.txt'), `${'x'.repeat(25)}\nshort\n${'y'.repeat(5)}\nmore\nand more\n`)
    const body = text(await run('read', { file_path: 'wide.txt' }))
    const lines = body.split('\n')
    expect(lines[0]).toBe(`     1\t${'x'.repeat(10)}… [line cut at 10 characters]`)
    expect(lines[1]).toBe('     2\tshort')
    expect(body).toBe(
      `${lines[0]}\n${lines[1]}\n\n(Output capped at 70 bytes. Showing lines 1-2 of 5. Use offset=3 to continue.)`,
    )
  })

  it('refuses binary files and reports missing files and folders clearly', async () => {
    await boot()
    await writeFile(join(dir, 'bin.dat'), Buffer.from([0x50, 0x4b, 0x00, 0x01, 0x02]))
    const binary = await run('read', { file_path: 'bin.dat' })
    expect(binary.error?.code).toBe('FS_NOT_TEXT')
    expect(text(binary)).toContain('binary')
    const missing = await run('read', { file_path: 'nope/missing.txt' })
    expect(missing.error?.code).toBe('FS_NOT_FOUND')
    expect(text(missing)).toContain('nope/missing.txt')
    await mkdir(join(dir, 'sub'))
    expect((await run('read', { file_path: 'sub' })).error?.code).toBe('FS_IS_DIRECTORY')
  })

  it('says when a file is empty', async () => {
    await boot()
    await writeFile(join(dir, 'empty.txt'), '')
    expect(text(await run('read', { file_path: 'empty.txt' }))).toBe('(empty.txt is empty.)')
  })
})

describe('write', () => {
  it('creates parent folders and reports bytes written and whether it created or overwrote', async () => {
    await boot()
    const created = await run('write', { file_path: 'deep/er/new.txt', content: 'héllo\n' })
    expect(text(created)).toBe('Created deep/er/new.txt (7 bytes written).')
    expect(await readFile(join(dir, 'deep/er/new.txt'), 'utf8')).toBe('héllo\n')
    const overwritten = await run('write', { file_path: 'deep/er/new.txt', content: 'bye' })
    expect(text(overwritten)).toBe(
      'Overwrote deep/er/new.txt (3 bytes written).\n\n' +
        '--- deep/er/new.txt\n+++ deep/er/new.txt\n@@ -1,1 +1,1 @@\n-héllo\n+bye\n\\ No newline at end of file',
    )
    expect(overwritten.meta).toMatchObject({ operation: 'overwrite', oldText: 'héllo\n' })
    expect(await readFile(join(dir, 'deep/er/new.txt'), 'utf8')).toBe('bye')
  })

  it('over a file it cannot diff (too large, binary, not UTF-8) says why, and still writes', async () => {
    await boot({ maxWriteDiffBytes: 8, maxDiffLines: 4 })
    await writeFile(join(dir, 'big.txt'), 'more than eight bytes\n')
    await writeFile(join(dir, 'blob.bin'), Buffer.from([1, 0, 2]))
    await writeFile(join(dir, 'latin.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9]))
    await writeFile(join(dir, 'lines.txt'), 'a\nb\n')
    const cases: Array<[string, string]> = [
      ['big.txt', 'No diff: the previous content is larger than 8 bytes.'],
      ['blob.bin', 'No diff: the previous content was binary.'],
      ['latin.txt', 'No diff: the previous content was not UTF-8 text.'],
    ]
    for (const [file, why] of cases) {
      const result = await run('write', { file_path: file, content: 'x\n' })
      expect(text(result)).toBe(`Overwrote ${file} (2 bytes written). ${why}`)
      expect(result.meta).not.toHaveProperty('oldText')
      expect(await readFile(join(dir, file), 'utf8')).toBe('x\n')
    }
    // A long diff is cut at maxDiffLines.
    expect(text(await run('write', { file_path: 'lines.txt', content: 'c\nd\n' }))).toBe(
      'Overwrote lines.txt (4 bytes written).\n\n--- lines.txt\n+++ lines.txt\n@@ -1,2 +1,2 @@\n-a\n… (3 more diff lines not shown)',
    )
  })

  it('accepts absolute paths outside the workspace', async () => {
    await boot()
    const elsewhere = await mkdtemp(join(tmpdir(), 'dsh-tool-fs-out-'))
    try {
      const target = join(elsewhere, 'x.txt')
      expect(text(await run('write', { file_path: target, content: 'x' }))).toBe(`Created ${target} (1 bytes written).`)
    } finally {
      await rm(elsewhere, { recursive: true, force: true })
    }
  })
})

describe('edit', () => {
  const source = 'function greet() {\n  return "hi"\n}\n\nfunction part() {\n  return "bye"\n}\n'

  /** Boots the tools and has the session read g.ts, holding `source`: the state an edit starts from. */
  async function readSource(): Promise<void> {
    await boot()
    await writeFile(join(dir, 'g.ts'), source)
    await run('read', { file_path: 'g.ts' })
  }

  it('refuses a file that was not read in this session', async () => {
    await boot()
    await writeFile(join(dir, 'g.ts'), source)
    const result = await run('edit', { file_path: 'g.ts', old_string: '"hi"', new_string: '"hello"' })
    expect(result.error?.code).toBe('FS_NOT_READ')
    expect(text(result)).toContain('Read it with the read tool first')
    expect(await readFile(join(dir, 'g.ts'), 'utf8')).toBe(source)
    // Another session's read does not count.
    await run('read', { file_path: 'g.ts' }, { ...session, sessionState: new Map() })
    expect((await run('edit', { file_path: 'g.ts', old_string: '"hi"', new_string: '"hello"' })).error?.code).toBe(
      'FS_NOT_READ',
    )
  })

  it('replaces one exact match and returns a diff', async () => {
    await readSource()
    const result = await run('edit', { file_path: 'g.ts', old_string: '  return "hi"', new_string: '  return "hello"' })
    expect(result.isError).toBe(false)
    expect(text(result)).toBe(
      [
        'Edited g.ts: replaced one occurrence.',
        '',
        '--- g.ts',
        '+++ g.ts',
        '@@ -1,5 +1,5 @@',
        ' function greet() {',
        '-  return "hi"',
        '+  return "hello"',
        ' }',
        ' ',
        ' function part() {',
      ].join('\n'),
    )
    expect(await readFile(join(dir, 'g.ts'), 'utf8')).toBe(source.replace('"hi"', '"hello"'))
    // The session knows the new content: a second edit needs no new read.
    const again = await run('edit', { file_path: 'g.ts', old_string: '"bye"', new_string: '"ciao"' })
    expect(again.isError).toBe(false)
    expect(text(again)).toContain('-  return "bye"\n+  return "ciao"')
  })

  it('refuses a file changed on disk since it was read', async () => {
    await readSource()
    await writeFile(join(dir, 'g.ts'), source.replace('greet', 'welcome'))
    const result = await run('edit', { file_path: 'g.ts', old_string: '"hi"', new_string: '"hello"' })
    expect(result.error?.code).toBe('FS_STALE')
    expect(text(result)).toContain('changed on disk since you last read it')
    expect(await readFile(join(dir, 'g.ts'), 'utf8')).toBe(source.replace('greet', 'welcome'))
    await run('read', { file_path: 'g.ts' })
    expect((await run('edit', { file_path: 'g.ts', old_string: '"hi"', new_string: '"hello"' })).isError).toBe(false)
  })

  it('asks for more context on several matches, and replaces them all with replace_all', async () => {
    await readSource()
    const ambiguous = await run('edit', { file_path: 'g.ts', old_string: 'function', new_string: 'const fn =' })
    expect(ambiguous.error?.code).toBe('FS_AMBIGUOUS_EDIT')
    expect(text(ambiguous)).toContain('occurs 2 times')
    expect(text(ambiguous)).toContain('replace_all')
    expect(await readFile(join(dir, 'g.ts'), 'utf8')).toBe(source)

    const all = await run('edit', { file_path: 'g.ts', old_string: 'return', new_string: 'yield', replace_all: true })
    expect(all.isError).toBe(false)
    expect(text(all)).toContain('replaced all 2 occurrences')
    expect(text(all)).toContain('-  return "hi"\n+  yield "hi"')
    expect(text(all)).toContain('-  return "bye"\n+  yield "bye"')
    expect(await readFile(join(dir, 'g.ts'), 'utf8')).toBe(source.replaceAll('return', 'yield'))
  })

  it('explains a missing match and refuses a no-op', async () => {
    await readSource()
    const missing = await run('edit', { file_path: 'g.ts', old_string: 'return "hey"', new_string: 'x' })
    expect(missing.error?.code).toBe('FS_EDIT_NOT_FOUND')
    expect(text(missing)).toContain('must match the file exactly')
    expect((await run('edit', { file_path: 'g.ts', old_string: 'x', new_string: 'x' })).error?.code).toBe(
      'FS_EDIT_NO_CHANGE',
    )
    expect((await run('edit', { file_path: 'gone.ts', old_string: 'x', new_string: 'y' })).error?.code).toBe(
      'FS_NOT_FOUND',
    )
  })

  it('edits a file this session wrote without reading it', async () => {
    await boot()
    await run('write', { file_path: 'w.txt', content: 'one\ntwo\n' })
    const result = await run('edit', { file_path: 'w.txt', old_string: 'two', new_string: '2' })
    expect(result.isError).toBe(false)
    expect(await readFile(join(dir, 'w.txt'), 'utf8')).toBe('one\n2\n')
  })

  it('keeps CRLF line endings when the model writes LF', async () => {
    await boot()
    await writeFile(join(dir, 'win.txt'), 'a\r\nb\r\nc\r\n')
    await run('read', { file_path: 'win.txt' })
    const result = await run('edit', { file_path: 'win.txt', old_string: 'a\nb', new_string: 'a\nB\nb' })
    expect(result.isError).toBe(false)
    expect(await readFile(join(dir, 'win.txt'), 'utf8')).toBe('a\r\nB\r\nb\r\nc\r\n')
    expect(text(result)).toContain(' a\n+B\n b')
  })

  it('shows a deletion and an insertion at the end of a file', async () => {
    await boot()
    await writeFile(join(dir, 'list.txt'), 'one\ntwo\nthree\n')
    await run('read', { file_path: 'list.txt' })
    const removed = text(await run('edit', { file_path: 'list.txt', old_string: 'two\n', new_string: '' }))
    expect(removed).toContain('@@ -1,3 +1,2 @@\n one\n-two\n three')
    const added = text(await run('edit', { file_path: 'list.txt', old_string: 'three\n', new_string: 'three\nfour\n' }))
    expect(added).toContain('@@ -1,2 +1,3 @@\n one\n three\n+four')
    expect(await readFile(join(dir, 'list.txt'), 'utf8')).toBe('one\nthree\nfour\n')
    expect((await stat(join(dir, 'list.txt'))).isFile()).toBe(true)
  })
})
