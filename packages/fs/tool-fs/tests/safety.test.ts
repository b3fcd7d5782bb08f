import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import type { Context } from '@dsh/cordis'
import {
  type DirEntry,
  type FileStat,
  FileSystem,
  FileSystemError,
  type HeldPath,
  type FsAccessRequest,
  type FsCallOptions,
  type ResolvedPath,
  type ResolveOptions,
  type WriteResult,
} from '@dsh/fs'
import { afterEach, describe, expect, it } from 'vitest'
import { imageType } from '../src/index.ts'
import { expectEachFails, type Setup, setup, text } from './helpers.ts'

let s: Setup
afterEach(async () => {
  await s?.dispose()
})

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
)

/** Mounts a policy denying writes that land outside the workspace; returns what it was asked. */
async function confineWrites(): Promise<FsAccessRequest[]> {
  const seen: FsAccessRequest[] = []
  await s.root.plugin((ctx: Context) => {
    ctx.on('fs/write', (request, next) => {
      seen.push(request)
      return request.path.insideWorkspace
        ? next()
        : { kind: 'deny', reason: 'the workspace-write preset only allows writes inside the workspace' }
    })
  })
  return seen
}

describe('tool declarations', () => {
  it('declare what they touch, and the read-only ones may run side by side', async () => {
    s = await setup()
    const access = (name: string, args: Record<string, unknown>) => s.root.tools.get(name)?.access?.(args as never)
    expect(access('read', { file_path: 'a.txt' })).toMatchObject({ kind: 'read', paths: ['a.txt'] })
    expect(access('glob', { pattern: '*.ts' })).toMatchObject({ kind: 'read', paths: ['.'], summary: 'glob *.ts' })
    expect(access('grep', { pattern: 'x', path: 'src' })).toMatchObject({
      kind: 'read',
      paths: ['src'],
      summary: 'grep x',
    })
    expect(access('ls', {})).toMatchObject({ kind: 'read', paths: ['.'] })
    expect(access('write', { file_path: 'b.txt', content: '' })).toMatchObject({ kind: 'write', paths: ['b.txt'] })
    expect(access('edit', { file_path: 'c.txt', old_string: 'a', new_string: 'b' })).toMatchObject({
      kind: 'write',
      paths: ['c.txt'],
    })
    for (const [name, args] of [
      ['read', { file_path: 'a' }],
      ['glob', { pattern: '*' }],
      ['grep', { pattern: 'x' }],
      ['ls', {}],
    ] as const) {
      expect(s.root.tools.get(name)?.readOnly).toBe(true)
      expect(s.root.tools.isConcurrencySafe(name, JSON.stringify(args))).toBe(true)
    }
    expect(s.root.tools.get('write')?.readOnly).toBeFalsy()
    expect(s.root.tools.get('edit')?.readOnly).toBeFalsy()
  })
})

describe('bad arguments', () => {
  it('reports wrong types, missing fields and huge values, and changes nothing', async () => {
    s = await setup({ config: { maxWriteBytes: 16 } })
    const cases: [string, unknown, string][] = [
      ['read', { file_path: 42 }, 'file_path:'],
      ['read', { file_path: 'a', offset: 1e300 }, 'offset:'],
      ['read', { file_path: 'a', offset: -3 }, 'offset:'],
      ['read', { file_path: 'x'.repeat(5000) }, 'path:'],
      ['write', { file_path: 'a.txt' }, 'content:'],
      ['write', { content: 'x' }, 'path:'],
      ['edit', { file_path: 'a.txt', old_string: '', new_string: 'x' }, 'old_string:'],
      ['edit', { file_path: 'a.txt', old_string: 'x', new_string: 'y', replace_all: 'yes' }, 'replace_all:'],
      ['glob', {}, 'pattern:'],
      ['grep', { pattern: 'x', include: 42 }, 'include:'],
      ['grep', { pattern: 'x', include: '' }, 'include:'],
      ['ls', { ignore: Array.from({ length: 101 }, (_, i) => `p${i}`) }, 'ignore:'],
      ['ls', { ignore: 'dist' }, 'ignore:'],
    ]
    for (const [name, args, where] of cases) {
      const result = await s.run(name, args)
      expect(result.error?.code, `${name} ${JSON.stringify(args).slice(0, 80)}`).toBe('INVALID_ARGUMENTS')
      expect(text(result)).toContain(where)
    }
    expect((await s.run('read', '{"file_path": ')).error?.code).toBe('INVALID_JSON')

    const big = await s.run('write', { file_path: 'big.txt', content: 'x'.repeat(17) })
    expect(big.error?.code).toBe('FS_TOO_LARGE')
    expect(text(big)).toContain('at most 16 bytes')
    expect(await readdir(s.workspace)).toEqual([])
  })

  it('refuses NUL bytes in paths with a clear error', async () => {
    s = await setup()
    await expectEachFails(
      s,
      [
        ['read', { file_path: 'a\u0000b.txt' }],
        ['write', { file_path: 'a\u0000b.txt', content: 'x' }],
        ['edit', { file_path: 'a\u0000b.txt', old_string: 'x', new_string: 'y' }],
        ['ls', { path: 'a\u0000b' }],
        ['glob', { pattern: '*', path: 'a\u0000b' }],
        ['grep', { pattern: 'x', path: 'a\u0000b' }],
      ],
      'FS_INVALID_PATH',
      'NUL byte',
      'a\\x00b',
    )
    expect(await readdir(s.workspace)).toEqual([])
  })
})

describe('paths that leave the workspace', () => {
  it('are resolved, not refused, by the seam itself', async () => {
    s = await setup()
    const written = await s.run('write', { file_path: '../outside/free.txt', content: 'ok' })
    expect(text(written)).toBe(`Created ${path.join(s.outside, 'free.txt')} (2 bytes written).`)
    expect(await readFile(path.join(s.outside, 'free.txt'), 'utf8')).toBe('ok')
  })

  it('are denied by a policy listener, through .. or a symlink, and nothing changes', async () => {
    s = await setup()
    const seen = await confineWrites()
    await symlink(s.outside, path.join(s.workspace, 'out-link'))
    await mkdir(path.join(s.workspace, 'inner'))
    await symlink('inner', path.join(s.workspace, 'in-link'))
    await writeFile(path.join(s.outside, 'theirs.txt'), 'original\n')

    const dotdot = await s.run('write', { file_path: '../outside/escape.txt', content: 'x' })
    expect(dotdot.error?.code).toBe('FS_DENIED')
    expect(text(dotdot)).toBe(
      `Error: access to ${path.join(s.outside, 'escape.txt')} was denied: the workspace-write preset only allows writes inside the workspace. Do not retry this path.`,
    )
    const viaLink = await s.run('write', { file_path: 'out-link/escape.txt', content: 'x' })
    expect(viaLink.error?.code).toBe('FS_DENIED')
    expect(text(viaLink)).toContain('access to out-link/escape.txt was denied')

    // Reading through the link is fine; editing what was read is not.
    expect((await s.run('read', { file_path: 'out-link/theirs.txt' })).isError).toBe(false)
    const edit = await s.run('edit', {
      file_path: 'out-link/theirs.txt',
      old_string: 'original',
      new_string: 'changed',
    })
    expect(edit.error?.code).toBe('FS_DENIED')
    expect(await readFile(path.join(s.outside, 'theirs.txt'), 'utf8')).toBe('original\n')
    expect((await readdir(s.outside)).sort()).toEqual(['theirs.txt'])

    // A symlink that stays inside is inside.
    expect((await s.run('write', { file_path: 'in-link/ok.txt', content: 'fine' })).isError).toBe(false)
    expect(await readFile(path.join(s.workspace, 'inner/ok.txt'), 'utf8')).toBe('fine')

    expect(
      seen.map((request) => [
        path.relative(s.base, request.path.real),
        request.path.insideWorkspace,
        request.sessionId,
      ]),
    ).toEqual([
      ['outside/escape.txt', false, 'tool-fs-session'],
      ['outside/escape.txt', false, 'tool-fs-session'],
      ['outside/theirs.txt', false, 'tool-fs-session'],
      ['ws/inner/ok.txt', true, 'tool-fs-session'],
    ])
  })

  it('are denied for reads by an fs/read policy, in every reading tool', async () => {
    s = await setup()
    await writeFile(path.join(s.outside, 'secret.txt'), 'secret\n')
    await symlink(s.outside, path.join(s.workspace, 'out-link'))
    await s.root.plugin((ctx: Context) => {
      ctx.on('fs/read', (request, next) =>
        request.path.insideWorkspace ? next() : { kind: 'deny', reason: 'reads stay in the workspace' },
      )
    })
    await expectEachFails(
      s,
      [
        ['read', { file_path: 'out-link/secret.txt' }],
        ['ls', { path: '../outside' }],
        ['glob', { pattern: '*', path: 'out-link' }],
        ['grep', { pattern: 'secret', path: 'out-link' }],
      ],
      'FS_DENIED',
      'reads stay in the workspace',
    )
  })
})

describe('read of binary files and images', () => {
  it('returns a PNG as an image block, whatever its name', async () => {
    s = await setup()
    await writeFile(path.join(s.workspace, 'pixel.png'), PNG)
    await writeFile(path.join(s.workspace, 'no-extension'), PNG)
    const result = await s.run('read', { file_path: 'pixel.png' })
    expect(result.isError).toBe(false)
    expect(result.content).toEqual([
      { type: 'text', text: `pixel.png: PNG image, ${PNG.length} bytes.` },
      { type: 'image', mediaType: 'image/png', data: PNG.toString('base64') },
    ])
    expect(result.meta).toMatchObject({ mediaType: 'image/png', bytes: PNG.length })
    expect((await s.run('read', { file_path: 'no-extension' })).content[1]).toMatchObject({
      type: 'image',
      mediaType: 'image/png',
    })
  })

  it('tells image formats apart by their magic bytes', () => {
    expect(imageType(PNG)).toBe('image/png')
    expect(imageType(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]))).toBe('image/jpeg')
    expect(imageType(Buffer.from('GIF89a\x01\x00', 'latin1'))).toBe('image/gif')
    expect(imageType(Buffer.from('GIF87a', 'latin1'))).toBe('image/gif')
    expect(imageType(Buffer.from('RIFF\x24\x00\x00\x00WEBPVP8 ', 'latin1'))).toBe('image/webp')
    expect(imageType(Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'))).toBeUndefined()
    expect(imageType(Buffer.from('\x89PN', 'latin1'))).toBeUndefined()
    expect(imageType(Buffer.from('just text'))).toBeUndefined()
  })

  it('refuses images over the size cap, other binaries and non-UTF-8 text, clearly', async () => {
    s = await setup({ config: { maxImageBytes: 32 } })
    await writeFile(path.join(s.workspace, 'pixel.png'), PNG)
    const big = await s.run('read', { file_path: 'pixel.png' })
    expect(big.error?.code).toBe('FS_IMAGE_TOO_LARGE')
    expect(text(big)).toBe(
      `Error: pixel.png is a PNG image of ${PNG.length} bytes; read returns images up to 32 bytes.`,
    )

    await writeFile(path.join(s.workspace, 'app.wasm'), Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]))
    const binary = await s.run('read', { file_path: 'app.wasm' })
    expect(binary.error?.code).toBe('FS_NOT_TEXT')
    expect(text(binary)).toContain('binary file (it contains NUL bytes)')

    await writeFile(path.join(s.workspace, 'latin1.txt'), Buffer.from('caf\xe9 cr\xe8me\n', 'latin1'))
    const latin1 = await s.run('read', { file_path: 'latin1.txt' })
    expect(latin1.error?.code).toBe('FS_NOT_TEXT')
    expect(text(latin1)).toContain('not UTF-8 text')

    // A multi-byte character cut by the 8 KiB sample is still text.
    await writeFile(path.join(s.workspace, 'wide.txt'), `${'a'.repeat(8191)}é\n`)
    expect((await s.run('read', { file_path: 'wide.txt' })).isError).toBe(false)
  })
})

describe('edit', () => {
  it('reports text found twice or not at all and changes nothing', async () => {
    s = await setup()
    await writeFile(path.join(s.workspace, 'twice.txt'), 'same\nsame\n')
    await s.run('read', { file_path: 'twice.txt' })
    const twice = await s.run('edit', { file_path: 'twice.txt', old_string: 'same', new_string: 'other' })
    expect(twice.error?.code).toBe('FS_AMBIGUOUS_EDIT')
    const missing = await s.run('edit', { file_path: 'twice.txt', old_string: 'absent', new_string: 'other' })
    expect(missing.error?.code).toBe('FS_EDIT_NOT_FOUND')
    expect(await readFile(path.join(s.workspace, 'twice.txt'), 'utf8')).toBe('same\nsame\n')
    expect(await readdir(s.workspace)).toEqual(['twice.txt'])
  })

  it('keeps the permissions of the file it replaces', async () => {
    s = await setup()
    const file = path.join(s.workspace, 'run.sh')
    await writeFile(file, '#!/bin/sh\necho hi\n', { mode: 0o755 })
    await s.run('read', { file_path: 'run.sh' })
    expect((await s.run('edit', { file_path: 'run.sh', old_string: 'hi', new_string: 'hello' })).isError).toBe(false)
    expect((await stat(file)).mode & 0o777).toBe(0o755)
    expect(await readFile(file, 'utf8')).toBe('#!/bin/sh\necho hello\n')
  })
})

/** A file system held in memory: enough of the seam to show that the tools follow whichever provider is mounted. */
class MemoryFileSystem extends FileSystem {
  readonly files = new Map<string, Buffer>()

  async resolve(given: string, options: ResolveOptions): Promise<ResolvedPath> {
    if (given.includes('\0')) throw new FileSystemError('INVALID_PATH', given, 'the path contains a NUL byte')
    const absolute = path.resolve(options.cwd, given)
    const workspace = path.resolve(options.workspace ?? options.cwd)
    return {
      absolute,
      real: absolute,
      workspace,
      insideWorkspace: absolute === workspace || absolute.startsWith(`${workspace}/`),
    }
  }

  private async open(
    given: string,
    options: FsCallOptions,
    kind: 'read' | 'write',
    operation: 'stat' | 'readFile' | 'readStream' | 'writeFile',
  ) {
    const target = await this.resolve(given, options)
    await this.authorize(kind, operation, target, options)
    return target
  }

  private content(target: ResolvedPath): Buffer {
    const data = this.files.get(target.real)
    if (!data) throw new FileSystemError('NOT_FOUND', target.absolute, `no such file: ${target.absolute}`)
    return data
  }

  async stat(given: string, options: FsCallOptions): Promise<FileStat> {
    const target = await this.open(given, options, 'read', 'stat')
    const data = this.content(target)
    return { path: target, type: 'file', size: data.length, mtimeMs: 0, mode: 0o644 }
  }

  async readFile(given: string, options: FsCallOptions): Promise<Buffer> {
    return this.content(await this.open(given, options, 'read', 'readFile'))
  }

  async readStream(given: string, options: FsCallOptions): Promise<Readable> {
    return Readable.from([this.content(await this.open(given, options, 'read', 'readStream'))])
  }

  async writeFile(given: string, data: string | Uint8Array, options: FsCallOptions): Promise<WriteResult> {
    const target = await this.open(given, options, 'write', 'writeFile')
    const created = !this.files.has(target.real)
    const bytes = Buffer.from(data)
    this.files.set(target.real, bytes)
    return { path: target, created, bytes: bytes.length, mtimeMs: 0 }
  }

  async readdir(): Promise<DirEntry[]> {
    return []
  }

  async mkdir(given: string, options: FsCallOptions): Promise<ResolvedPath> {
    return this.resolve(given, options)
  }

  async hold(given: string): Promise<HeldPath> {
    throw new FileSystemError('IO', given, 'the memory provider holds nothing open')
  }
}

describe('the ctx.fs seam', () => {
  it('carries every file tool over to another provider', async () => {
    s = await setup()
    await writeFile(path.join(s.workspace, 'disk.txt'), 'on disk\n')
    await s.fsFiber.dispose()
    // Without ctx.fs the tools are gone, not failing.
    expect(s.root.tools.get('read')).toBeUndefined()

    const memoryFiber = s.root.plugin(MemoryFileSystem)
    await memoryFiber
    const memory = s.root.get('fs') as MemoryFileSystem
    expect(memory).toBeInstanceOf(MemoryFileSystem)
    expect(s.root.tools.get('read')).toBeDefined()

    memory.files.set(path.join(s.workspace, 'notes.txt'), Buffer.from('in memory\n'))
    expect(text(await s.run('read', { file_path: 'notes.txt' }))).toBe('     1\tin memory')
    expect((await s.run('read', { file_path: 'disk.txt' })).error?.code).toBe('FS_NOT_FOUND')
    expect((await s.run('edit', { file_path: 'notes.txt', old_string: 'in', new_string: 'still in' })).isError).toBe(
      false,
    )
    expect(memory.files.get(path.join(s.workspace, 'notes.txt'))?.toString()).toBe('still in memory\n')
    expect((await s.run('write', { file_path: 'new.txt', content: 'x' })).isError).toBe(false)
    expect(memory.files.has(path.join(s.workspace, 'new.txt'))).toBe(true)
    expect((await readdir(s.workspace)).sort()).toEqual(['disk.txt'])
    await memoryFiber.dispose()
  })
})
