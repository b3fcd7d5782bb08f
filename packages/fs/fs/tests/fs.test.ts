import { execFileSync } from 'node:child_process'
import { chmod, link, mkdir, readdir, readFile, realpath, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import { disposeTestRoot } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as fsPlugin from '../src/index.ts'
import type { FileSystem, FsAccessRequest } from '../src/index.ts'
import { failureOf, scratchWorkspace } from './support.ts'

let root: Context
let base: string
let workspace: string
let outside: string
let fs: FileSystem

beforeEach(async () => {
  root = new Context()
  ;({ base, workspace, outside } = await scratchWorkspace('dsh-fs-'))
  await root.plugin(fsPlugin, {})
  fs = root.fs
})

afterEach(() => disposeTestRoot(root, base))

const at = () => ({ cwd: workspace, sessionId: 'sess-1' })

/** A policy: writes must land inside the workspace. */
function confineWrites(seen: FsAccessRequest[] = []) {
  const plugin = (ctx: Context) => {
    ctx.on('fs/write', async (request, next) => {
      seen.push(request)
      if (!request.path.insideWorkspace) return { kind: 'deny', reason: 'writes outside the workspace are not allowed' }
      return next()
    })
  }
  return root.plugin(plugin)
}

describe('resolve', () => {
  it('resolves relative and absolute paths against cwd and says whether they stay inside the workspace', async () => {
    expect(await fs.resolve('a/b.txt', at())).toEqual({
      absolute: path.join(workspace, 'a/b.txt'),
      real: path.join(workspace, 'a/b.txt'),
      workspace,
      insideWorkspace: true,
    })
    expect((await fs.resolve('.', at())).insideWorkspace).toBe(true)
    const escaped = await fs.resolve('../outside/x.txt', at())
    expect(escaped).toMatchObject({
      absolute: path.join(outside, 'x.txt'),
      real: path.join(outside, 'x.txt'),
      insideWorkspace: false,
    })
    expect((await fs.resolve(path.join(outside, 'x'), at())).insideWorkspace).toBe(false)
    // A sibling whose name starts with the workspace's is still outside.
    expect((await fs.resolve(`${workspace}-other/x`, at())).insideWorkspace).toBe(false)
    // An explicit workspace root other than cwd.
    expect((await fs.resolve('x', { cwd: path.join(workspace, 'sub'), workspace })).insideWorkspace).toBe(true)
  })

  it('follows symlinks, existing or dangling, to where they really lead', async () => {
    await symlink(outside, path.join(workspace, 'out-link'))
    await symlink(path.join(outside, 'not-yet.txt'), path.join(workspace, 'dangling'))
    await mkdir(path.join(workspace, 'inner'))
    await symlink('inner', path.join(workspace, 'in-link'))
    await symlink('../ws/inner/../../outside', path.join(workspace, 'relative-out'))

    expect(await fs.resolve('out-link/new/file.txt', at())).toMatchObject({
      absolute: path.join(workspace, 'out-link/new/file.txt'),
      real: path.join(outside, 'new/file.txt'),
      insideWorkspace: false,
    })
    expect(await fs.resolve('dangling', at())).toMatchObject({
      real: path.join(outside, 'not-yet.txt'),
      insideWorkspace: false,
    })
    expect(await fs.resolve('in-link/x', at())).toMatchObject({
      real: path.join(workspace, 'inner/x'),
      insideWorkspace: true,
    })
    expect(await fs.resolve('relative-out/y', at())).toMatchObject({
      real: path.join(outside, 'y'),
      insideWorkspace: false,
    })
  })

  it('compares against the real workspace when the workspace itself is reached through a symlink', async () => {
    const alias = path.join(base, 'alias')
    await symlink(workspace, alias)
    expect(await fs.resolve('f.txt', { cwd: alias })).toMatchObject({
      absolute: path.join(alias, 'f.txt'),
      real: path.join(workspace, 'f.txt'),
      workspace,
      insideWorkspace: true,
    })
  })

  it('refuses NUL bytes, empty paths and a relative cwd, and reports symlink loops', async () => {
    const nul = await failureOf(fs.resolve('a\0b', at()))
    expect(nul.code).toBe('INVALID_PATH')
    expect(nul.message).toContain('NUL byte')
    expect((await failureOf(fs.resolve('', at()))).code).toBe('INVALID_PATH')
    expect((await failureOf(fs.resolve('x', { cwd: 'relative' }))).message).toContain('must be absolute')
    expect((await failureOf(fs.readFile('ok\0.txt', at()))).code).toBe('INVALID_PATH')

    await symlink('loop-b', path.join(workspace, 'loop-a'))
    await symlink('loop-a', path.join(workspace, 'loop-b'))
    expect((await failureOf(fs.resolve('loop-a/x', at()))).code).toBe('LOOP')
  })
})

describe('policy', () => {
  it('lets a listener deny writes outside the workspace, symlinks included, and changes nothing', async () => {
    const seen: FsAccessRequest[] = []
    await confineWrites(seen)
    await symlink(outside, path.join(workspace, 'out-link'))
    await symlink(path.join(outside, 'planted.txt'), path.join(workspace, 'planted'))

    await fs.writeFile('inside.txt', 'ok', at())
    expect(await readFile(path.join(workspace, 'inside.txt'), 'utf8')).toBe('ok')

    const escaped = await failureOf(fs.writeFile('../outside/escape.txt', 'no', at()))
    expect(escaped.code).toBe('DENIED')
    expect(escaped.reason).toBe('writes outside the workspace are not allowed')
    expect(escaped.message).toBe(
      `write access to ${path.join(outside, 'escape.txt')} was denied: writes outside the workspace are not allowed`,
    )

    const viaLink = await failureOf(fs.writeFile('out-link/sub/escape.txt', 'no', at()))
    expect(viaLink.code).toBe('DENIED')
    expect(viaLink.message).toContain(
      `${path.join(workspace, 'out-link/sub/escape.txt')} (which leads to ${path.join(outside, 'sub/escape.txt')})`,
    )
    expect((await failureOf(fs.writeFile('planted', 'no', at()))).code).toBe('DENIED')
    expect((await failureOf(fs.mkdir('out-link/newdir', at()))).code).toBe('DENIED')

    expect(await readdir(outside)).toEqual([])
    expect(seen.map((request) => [request.operation, request.path.insideWorkspace, request.sessionId])).toEqual([
      ['writeFile', true, 'sess-1'],
      ['writeFile', false, 'sess-1'],
      ['writeFile', false, 'sess-1'],
      ['writeFile', false, 'sess-1'],
      ['mkdir', false, 'sess-1'],
    ])
    // Reads are not this policy's business.
    await writeFile(path.join(outside, 'readable.txt'), 'hello')
    expect((await fs.readFile('out-link/readable.txt', at())).toString()).toBe('hello')
  })

  it('stops applying when the policy plugin is disposed', async () => {
    const policy = await confineWrites()
    expect((await failureOf(fs.writeFile(path.join(outside, 'a.txt'), 'x', at()))).code).toBe('DENIED')
    await policy.dispose()
    await fs.writeFile(path.join(outside, 'a.txt'), 'x', at())
    expect(await readFile(path.join(outside, 'a.txt'), 'utf8')).toBe('x')
  })

  it('asks fs/read before stat, readFile, readStream and readdir', async () => {
    const asked: string[] = []
    await root.plugin((ctx: Context) => {
      ctx.on('fs/read', (request) => {
        asked.push(request.operation)
        return { kind: 'deny', reason: 'no reading today' }
      })
    })
    await writeFile(path.join(workspace, 'f.txt'), 'x')
    // One at a time: each operation resolves its path asynchronously before asking, so started together they could ask in any order.
    for (const call of [
      () => fs.stat('f.txt', at()),
      () => fs.readFile('f.txt', at()),
      () => fs.readStream('f.txt', at()),
      () => fs.readdir('.', at()),
    ]) {
      const error = await failureOf(call())
      expect(error.code).toBe('DENIED')
      expect(error.message).toContain('no reading today')
    }
    expect(asked).toEqual(['stat', 'readFile', 'readStream', 'readdir'])
  })

  it('fails closed when a listener throws or answers nonsense', async () => {
    const fiber = await root.plugin((ctx: Context) => {
      ctx.on('fs/write', () => {
        throw new Error('policy exploded')
      })
    })
    const thrown = await failureOf(fs.writeFile('a.txt', 'x', at()))
    expect(thrown.code).toBe('DENIED')
    expect(thrown.message).toContain('policy exploded')
    await fiber.dispose()
    await root.plugin((ctx: Context) => {
      ctx.on('fs/write', () => ({ kind: 'maybe' }) as never)
    })
    expect((await failureOf(fs.writeFile('a.txt', 'x', at()))).message).toContain('no usable answer')
    await expect(stat(path.join(workspace, 'a.txt'))).rejects.toMatchObject({ code: 'ENOENT' })
  })
})

describe('content hooks', () => {
  /** Serves and stores the files of session `sess-1` in memory, like an editor with unsaved buffers. */
  function editorBuffers(buffers: Map<string, string>) {
    return root.plugin((ctx: Context) => {
      ctx.on('fs/read-content', async (request, next) => {
        const text = request.sessionId === 'sess-1' ? buffers.get(request.path.absolute) : undefined
        return text === undefined ? next() : Buffer.from(text)
      })
      ctx.on('fs/write-content', async (request, next) => {
        if (request.sessionId !== 'sess-1') return next()
        buffers.set(request.path.absolute, Buffer.from(request.data).toString('utf8'))
        return { path: request.path, created: false, bytes: request.data.length, mtimeMs: 0 }
      })
    })
  }

  it('lets a listener supply and store file content for a session, leaving the disk alone', async () => {
    const file = path.join(workspace, 'notes.txt')
    await writeFile(file, 'on disk\n')
    const buffers = new Map([[file, 'unsaved buffer\n']])
    const hooks = await editorBuffers(buffers)
    expect((await fs.readFile('notes.txt', at())).toString()).toBe('unsaved buffer\n')
    const chunks: Buffer[] = []
    for await (const chunk of await fs.readStream('notes.txt', { ...at(), start: 2, end: 6 }))
      chunks.push(chunk as Buffer)
    expect(Buffer.concat(chunks).toString()).toBe('saved')
    expect((await failureOf(fs.readFile('notes.txt', { ...at(), maxBytes: 4 }))).code).toBe('TOO_LARGE')

    const written = await fs.writeFile('notes.txt', 'edited\n', at())
    expect(written.bytes).toBe(7)
    expect(buffers.get(file)).toBe('edited\n')
    expect(await readFile(file, 'utf8')).toBe('on disk\n')
    // Another session goes to the disk.
    expect((await fs.readFile('notes.txt', { cwd: workspace, sessionId: 'sess-2' })).toString()).toBe('on disk\n')

    await hooks.dispose()
    expect((await fs.readFile('notes.txt', at())).toString()).toBe('on disk\n')
    await fs.writeFile('notes.txt', 'to disk\n', at())
    expect(await readFile(file, 'utf8')).toBe('to disk\n')
  })

  it('asks the content hooks only after the policy allowed the access, and names the path when a hook fails', async () => {
    const asked: string[] = []
    await root.plugin((ctx: Context) => {
      ctx.on('fs/read', () => ({ kind: 'deny', reason: 'no' }))
      ctx.on('fs/read-content', async () => {
        asked.push('read')
        return undefined
      })
      ctx.on('fs/write-content', async () => {
        throw new Error('the editor went away')
      })
    })
    await writeFile(path.join(workspace, 'f.txt'), 'x')
    expect((await failureOf(fs.readFile('f.txt', at()))).code).toBe('DENIED')
    expect(asked).toEqual([])
    const failed = await failureOf(fs.writeFile('f.txt', 'y', at()))
    expect(failed.code).toBe('IO')
    expect(failed.message).toBe(`could not write ${path.join(workspace, 'f.txt')}: the editor went away`)
    expect(await readFile(path.join(workspace, 'f.txt'), 'utf8')).toBe('x')
  })
})

describe('local provider', () => {
  it('writes atomically: a new inode renamed into place, no temp file left, permissions kept', async () => {
    const target = path.join(workspace, 'data.txt')
    await writeFile(target, 'old content')
    await chmod(target, 0o640)
    // A hard link keeps the old inode: an in-place write would change it too.
    await link(target, path.join(workspace, 'old-inode.txt'))

    const result = await fs.writeFile('data.txt', 'new content', at())
    expect(result).toMatchObject({ created: false, bytes: 11, path: { real: target } })
    expect(await readFile(target, 'utf8')).toBe('new content')
    expect(await readFile(path.join(workspace, 'old-inode.txt'), 'utf8')).toBe('old content')
    expect((await stat(target)).mode & 0o777).toBe(0o640)
    expect((await readdir(workspace)).sort()).toEqual(['data.txt', 'old-inode.txt'])
  })

  it('creates missing parents, and writes through a symlink to its target, keeping the link', async () => {
    const created = await fs.writeFile('deep/er/new.txt', Buffer.from([1, 2, 3]), at())
    expect(created.created).toBe(true)
    expect(await readFile(path.join(workspace, 'deep/er/new.txt'))).toEqual(Buffer.from([1, 2, 3]))

    await writeFile(path.join(workspace, 'target.txt'), 'before')
    await symlink('target.txt', path.join(workspace, 'alias.txt'))
    await fs.writeFile('alias.txt', 'after', at())
    expect(await readFile(path.join(workspace, 'target.txt'), 'utf8')).toBe('after')
    expect((await readdir(workspace)).sort()).toEqual(['alias.txt', 'deep', 'target.txt'])
    expect(await realpath(path.join(workspace, 'alias.txt'))).toBe(path.join(workspace, 'target.txt'))
  })

  it('refuses to write over a folder or under a file, leaving nothing behind', async () => {
    await mkdir(path.join(workspace, 'dir'))
    expect((await failureOf(fs.writeFile('dir', 'x', at()))).code).toBe('IS_DIRECTORY')
    await writeFile(path.join(workspace, 'file'), 'x')
    expect((await failureOf(fs.writeFile('file/child.txt', 'x', at()))).code).toBe('NOT_DIRECTORY')
    expect((await readdir(workspace)).sort()).toEqual(['dir', 'file'])
    expect(await readdir(path.join(workspace, 'dir'))).toEqual([])
  })

  it('reads, stats and lists, with clear errors', async () => {
    await writeFile(path.join(workspace, 'a.txt'), 'hello')
    await mkdir(path.join(workspace, 'sub'))
    await symlink('a.txt', path.join(workspace, 'link'))

    expect((await fs.readFile('a.txt', at())).toString()).toBe('hello')
    expect(await fs.stat('a.txt', at())).toMatchObject({ type: 'file', size: 5 })
    expect(await fs.stat('sub', at())).toMatchObject({ type: 'directory' })
    expect(await fs.stat('link', at())).toMatchObject({ type: 'file', path: { real: path.join(workspace, 'a.txt') } })
    expect(await fs.readdir('.', at())).toEqual([
      { name: 'a.txt', type: 'file' },
      { name: 'link', type: 'symlink' },
      { name: 'sub', type: 'directory' },
    ])

    const chunks: Buffer[] = []
    for await (const chunk of await fs.readStream('a.txt', { ...at(), start: 1, end: 3 })) chunks.push(chunk as Buffer)
    expect(Buffer.concat(chunks).toString()).toBe('ell')

    const missing = await failureOf(fs.readFile('missing.txt', at()))
    expect(missing.code).toBe('NOT_FOUND')
    expect(missing.path).toBe(path.join(workspace, 'missing.txt'))
    expect(missing.message).toContain(path.join(workspace, 'missing.txt'))
    expect((await failureOf(fs.readFile('sub', at()))).code).toBe('IS_DIRECTORY')
    expect((await failureOf(fs.readStream('sub', at()))).code).toBe('IS_DIRECTORY')
    expect((await failureOf(fs.readdir('a.txt', at()))).code).toBe('NOT_DIRECTORY')
    execFileSync('mkfifo', [path.join(workspace, 'pipe')])
    expect((await failureOf(fs.readFile('pipe', at()))).code).toBe('NOT_A_FILE')
    expect((await failureOf(fs.readStream('pipe', at()))).code).toBe('NOT_A_FILE')
    expect(await fs.stat('pipe', at())).toMatchObject({ type: 'other' })
    const big = await failureOf(fs.readFile('a.txt', { ...at(), maxBytes: 4 }))
    expect(big.code).toBe('TOO_LARGE')
    expect(big.message).toContain('5 bytes')
  })

  it('makes folders and stops on an aborted signal', async () => {
    await fs.mkdir('x/y/z', at())
    expect((await stat(path.join(workspace, 'x/y/z'))).isDirectory()).toBe(true)
    await fs.mkdir('x/y/z', at())
    await writeFile(path.join(workspace, 'plain'), '')
    expect((await failureOf(fs.mkdir('plain', at()))).code).toBe('NOT_DIRECTORY')

    const controller = new AbortController()
    controller.abort(new Error('stop'))
    await expect(fs.writeFile('never.txt', 'x', { ...at(), signal: controller.signal })).rejects.toThrow('stop')
    await expect(stat(path.join(workspace, 'never.txt'))).rejects.toMatchObject({ code: 'ENOENT' })
  })
})

describe('the seam', () => {
  it('is provided as ctx.fs by the plugin and removed with it', async () => {
    const local = new Context()
    const fiber = local.plugin(fsPlugin, {})
    await fiber
    expect(local.get('fs')).toBeInstanceOf(fsPlugin.FileSystem)
    await fiber.dispose()
    expect(local.get('fs')).toBeUndefined()
  })
})
