import { readdirSync } from 'node:fs'
import { lstat, mkdir, readdir, readFile, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import { disposeTestRoot } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as fsPlugin from '../src/index.ts'
import { checkedReal, type FileSystem, type FsAccessRequest, recordChecked } from '../src/index.ts'
import { failureOf, scratchWorkspace } from './support.ts'

let root: Context
let base: string
let workspace: string
let outside: string
let home: string
let fs: FileSystem

beforeEach(async () => {
  root = new Context()
  ;({ base, workspace, outside } = await scratchWorkspace('dsh-fs-race-'))
  home = path.join(base, 'dsh-home')
  await mkdir(path.join(home, 'profiles', 'work'), { recursive: true })
  await writeFile(path.join(home, '.credentials.yaml'), 'refs:\n  DEEPSEEK_API_KEY: sk-test-secret\n')
  await writeFile(path.join(home, '.env'), 'DEEPSEEK_API_KEY=sk-test-env\n')
  await writeFile(path.join(home, 'profiles', 'work', '.env'), 'X=sk-test-profile\n')
  await writeFile(path.join(home, 'settings.yaml'), 'model: m\n')
  await root.plugin(fsPlugin, {
    secretFiles: [
      path.join(home, '.credentials.yaml'),
      path.join(home, '.env'),
      path.join(home, 'profiles/*/.credentials.yaml'),
      path.join(home, 'profiles/*/.env'),
    ],
    denyRead: [path.join(base, 'keys')],
  })
  fs = root.fs
})

afterEach(() => disposeTestRoot(root, base))

const at = () => ({ cwd: workspace, sessionId: 'sess-1' })

/** Runs `swap` once, from inside the policy check: after the walk, before the access. */
async function swapDuringCheck(event: 'fs/read' | 'fs/write', swap: () => Promise<void>) {
  let done = false
  await root.plugin((ctx: Context) => {
    ctx.on(event, async (_request: FsAccessRequest, next) => {
      if (!done) {
        done = true
        await swap()
      }
      return next()
    })
  })
}

describe('descriptor resolution', () => {
  it('follows a symlink that stays inside the workspace, for reads and writes', async () => {
    await mkdir(path.join(workspace, 'real'))
    await symlink('real', path.join(workspace, 'link'))
    const written = await fs.writeFile('link/a.txt', 'through the link\n', at())
    expect(written.path).toMatchObject({ real: path.join(workspace, 'real', 'a.txt'), insideWorkspace: true })
    expect(await readFile(path.join(workspace, 'real', 'a.txt'), 'utf8')).toBe('through the link\n')
    expect((await fs.readFile('link/a.txt', at())).toString()).toBe('through the link\n')
    expect(await fs.readdir('link', at())).toEqual([{ name: 'a.txt', type: 'file' }])
  })

  it('shows the policy where a symlink out of the workspace leads, and writes nothing when it says no', async () => {
    await symlink(outside, path.join(workspace, 'out'))
    const seen: FsAccessRequest[] = []
    await root.plugin((ctx: Context) => {
      ctx.on('fs/write', async (request, next) => {
        seen.push(request)
        return request.path.insideWorkspace ? next() : { kind: 'deny', reason: 'outside' }
      })
    })
    const error = await failureOf(fs.writeFile('out/x.txt', 'x', at()))
    expect(error.code).toBe('DENIED')
    expect(seen[0]?.path).toMatchObject({ real: path.join(outside, 'x.txt'), insideWorkspace: false })
    expect(await readdir(outside)).toEqual([])
  })

  it('refuses a folder swapped for a symlink after the check, and nothing lands outside', async () => {
    await mkdir(path.join(workspace, 'd'))
    await swapDuringCheck('fs/write', async () => {
      await rename(path.join(workspace, 'd'), path.join(workspace, 'd-old'))
      await symlink(outside, path.join(workspace, 'd'))
    })
    const error = await failureOf(fs.writeFile('d/file', 'payload', at()))
    expect(error.code).toBe('PATH_CHANGED')
    expect(error.message).toMatch(/changed while it was being opened/)
    expect(await readdir(outside)).toEqual([])
    expect(await readdir(path.join(workspace, 'd-old'))).toEqual([])
  })

  it('does not follow a symlink planted at the name of a file being created', async () => {
    await mkdir(path.join(workspace, 'd'))
    await swapDuringCheck('fs/write', () => symlink(path.join(outside, 'victim'), path.join(workspace, 'd', 'file')))
    const error = await failureOf(fs.writeFile('d/file', 'payload', at()))
    expect(error.code).toBe('PATH_CHANGED')
    expect(await readdir(outside)).toEqual([])
    // The planted link is still a link: it was neither followed nor replaced by the content.
    expect((await lstat(path.join(workspace, 'd', 'file'))).isSymbolicLink()).toBe(true)
    expect((await readdir(path.join(workspace, 'd'))).filter((name) => name.endsWith('.tmp'))).toEqual([])
  })

  it('reads the file it checked, not one swapped in after the check', async () => {
    await writeFile(path.join(workspace, 'notes.txt'), 'mine\n')
    await writeFile(path.join(outside, 'secret.txt'), 'not yours\n')
    await swapDuringCheck('fs/read', async () => {
      await unlink(path.join(workspace, 'notes.txt'))
      await symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'notes.txt'))
    })
    const error = await failureOf(fs.readFile('notes.txt', at()))
    expect(error.code).toBe('PATH_CHANGED')
  })

  it('holds a call to the location a policy checked before it (expectReal, recordChecked)', async () => {
    await mkdir(path.join(workspace, 'd'))
    const state = new Map<string, unknown>()
    recordChecked(state, 'call-1', path.join(workspace, 'd', 'file'), path.join(workspace, 'd', 'file'))
    const expectReal = checkedReal(state, 'call-1', path.join(workspace, 'd', 'file'))
    expect(expectReal).toBe(path.join(workspace, 'd', 'file'))
    expect(checkedReal(state, 'call-2', path.join(workspace, 'd', 'file'))).toBeUndefined()
    // Between that check and the call, d became a symlink out of the workspace.
    await rm(path.join(workspace, 'd'), { recursive: true })
    await symlink(outside, path.join(workspace, 'd'))
    const error = await failureOf(fs.writeFile('d/file', 'payload', { ...at(), expectReal: expectReal as string }))
    expect(error.code).toBe('PATH_CHANGED')
    expect(error.message).toContain(
      `it was checked as ${path.join(workspace, 'd', 'file')} and now leads to ${path.join(outside, 'file')}`,
    )
    expect(await readdir(outside)).toEqual([])
  })

  it('creates missing folders one by one and still writes atomically', async () => {
    const written = await fs.writeFile('a/b/c.txt', 'deep\n', at())
    expect(written.created).toBe(true)
    expect(await readFile(path.join(workspace, 'a', 'b', 'c.txt'), 'utf8')).toBe('deep\n')
    await fs.writeFile('a/b/c.txt', 'again\n', at())
    expect(await readdir(path.join(workspace, 'a', 'b'))).toEqual(['c.txt'])
    expect(await fs.mkdir('x/y', at())).toMatchObject({ real: path.join(workspace, 'x', 'y') })
    expect((await lstat(path.join(workspace, 'x', 'y'))).isDirectory()).toBe(true)
  })

  it('holds a folder open for a process, and says when it moved', async () => {
    await mkdir(path.join(workspace, 'src'))
    const held = await fs.hold('src', at())
    expect(held.type).toBe('directory')
    expect(held.local).toBe(`/proc/${process.pid}/fd/${held.local.split('/').at(-1)}`)
    held.verify()
    await rename(path.join(workspace, 'src'), path.join(workspace, 'moved'))
    expect(() => held.verify()).toThrow(/changed while it was being opened/)
    held.close()
  })
})

describe('descriptors', () => {
  it('are all released after every kind of access, failed ones included', async () => {
    const open = () => readdirSync('/proc/self/fd').length
    await mkdir(path.join(workspace, 'dir'))
    await symlink('dir', path.join(workspace, 'link'))
    // Warm up whatever Node opens lazily (the thread pool, the first FileHandle).
    await fs.writeFile('warm.txt', 'x', at())
    await fs.readFile('warm.txt', at())
    const before = open()
    for (let i = 0; i < 20; i += 1) {
      await fs.writeFile(`link/f${i}.txt`, 'data', at())
      await fs.readFile(`link/f${i}.txt`, at())
      await fs.stat('link', at())
      await fs.readdir('link', at())
      await fs.mkdir(`link/sub${i}/deeper`, at())
      await failureOf(fs.readFile('missing/file', at()))
      await failureOf(fs.writeFile('link', 'onto a folder', at()))
      await failureOf(fs.readFile(path.join(home, '.env'), at()))
      const stream = await fs.readStream(`link/f${i}.txt`, at())
      await new Promise((resolve) => stream.on('close', resolve).resume())
      const held = await fs.hold('link', at())
      held.close()
    }
    expect(open()).toBe(before)
  })
})

describe('the deny-read list', () => {
  const refusedCodes = async (target: string) => {
    const codes: string[] = []
    for (const attempt of [
      () => fs.readFile(target, at()),
      () => fs.readStream(target, at()),
      () => fs.stat(target, at()),
      () => fs.writeFile(target, 'overwritten', at()),
      () => fs.hold(target, at()),
    ]) {
      codes.push((await failureOf(attempt())).code)
    }
    return codes
  }

  it("refuses dsh's own secret files to every access, saying what they are", async () => {
    for (const secret of ['.credentials.yaml', '.env', 'profiles/work/.env', 'profiles/other/.credentials.yaml']) {
      expect(await refusedCodes(path.join(home, secret))).toEqual(['DENIED', 'DENIED', 'DENIED', 'DENIED', 'DENIED'])
    }
    const error = await failureOf(fs.readFile(path.join(home, '.credentials.yaml'), at()))
    expect(error.reason).toMatch(/dsh's own secret store .*tools can never read/)
    expect(await readFile(path.join(home, '.credentials.yaml'), 'utf8')).toContain('sk-test-secret')
    expect(await readdir(path.join(home, 'profiles'))).toEqual(['work'])
    // Other files in the home stay readable.
    expect((await fs.readFile(path.join(home, 'settings.yaml'), at())).toString()).toBe('model: m\n')
  })

  it('refuses a symlink to a secret, by where it leads', async () => {
    await symlink(path.join(home, '.credentials.yaml'), path.join(workspace, 'innocent.txt'))
    await symlink(home, path.join(workspace, 'home-link'))
    expect(await refusedCodes('innocent.txt')).toEqual(['DENIED', 'DENIED', 'DENIED', 'DENIED', 'DENIED'])
    expect((await failureOf(fs.readFile('home-link/.env', at()))).code).toBe('DENIED')
  })

  it('leaves denied entries out of folder listings', async () => {
    expect((await fs.readdir(home, at())).map((entry) => entry.name)).toEqual(['profiles', 'settings.yaml'])
    expect(await fs.readdir(path.join(home, 'profiles', 'work'), at())).toEqual([])
  })

  it('denies whole folders on denyRead, and the parts of patterns below a searched folder', async () => {
    await mkdir(path.join(base, 'keys'))
    await writeFile(path.join(base, 'keys', 'id_ed25519'), 'private\n')
    const error = await failureOf(fs.readFile(path.join(base, 'keys', 'id_ed25519'), at()))
    expect(error.reason).toMatch(/deny-read list/)
    expect((await failureOf(fs.readdir(path.join(base, 'keys'), at()))).code).toBe('DENIED')
    expect(fs.deniedBelow(home)).toEqual(
      expect.arrayContaining([['.credentials.yaml'], ['.env'], ['profiles', '*', '.env']]),
    )
    expect(fs.deniedBelow(path.join(home, 'profiles', 'work'))).toEqual(
      expect.arrayContaining([['.env'], ['.credentials.yaml']]),
    )
    expect(fs.deniedBelow(workspace)).toEqual([])
  })

  it('takes ~/ paths and refuses relative ones, naming the field and entry', async () => {
    const ctx = new Context()
    await ctx.plugin(fsPlugin, { denyRead: ['~/.ssh'] })
    expect(ctx.fs.deniedReason(path.join(homedir(), '.ssh', 'id_rsa'))).toMatch(/deny-read list \(~\/\.ssh\)/)
    await ctx.fiber.dispose()

    expect(() => new fsPlugin.LocalFileSystem(new Context(), { denyRead: ['/ok', 'relative/path'] })).toThrow(
      'fs config denyRead[1] is "relative/path": give an absolute path or one starting with ~/',
    )
  })
})
