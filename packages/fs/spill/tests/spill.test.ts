import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import { disposeTestRoot, mountPlugin } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as spill from '../src/index.ts'
import type { LocalSpillConfig } from '../src/index.ts'

let root: Context
let scratch: string

beforeEach(async () => {
  root = new Context()
  scratch = await mkdtemp(path.join(tmpdir(), 'dsh-spill-test-'))
})

afterEach(() => disposeTestRoot(root, scratch))

async function start(config: Partial<LocalSpillConfig> = {}) {
  const fiber = await mountPlugin(root, spill, config)
  const store = root.get('spill') as spill.LocalSpillStore | undefined
  if (!store) throw new Error('ctx.spill was not provided')
  return { fiber, store }
}

const mode = async (target: string) => (await stat(target)).mode & 0o777

describe('local spill store', () => {
  it('creates a private temp folder at the first save and saves 0600 files with random names in 0700 session folders', async () => {
    const { store } = await start()
    expect(store.root).toBe('') // nothing on disk until something is spilled
    const text = 'line one\nline two — ünïcode\n'
    const saved = await store.save({ sessionId: 's-1', text, label: 'grep' })
    expect(path.dirname(store.root)).toBe(tmpdir())
    expect(path.basename(store.root)).toMatch(/^dsh-spill-/)
    expect(await mode(store.root)).toBe(0o700)
    expect(saved.bytes).toBe(Buffer.byteLength(text))
    expect(await readFile(saved.path, 'utf8')).toBe(text)
    expect(path.basename(saved.path)).toMatch(/^[0-9a-f]{32}-grep\.txt$/)
    expect(await mode(saved.path)).toBe(0o600)
    const sessionFolder = path.dirname(saved.path)
    expect(path.dirname(sessionFolder)).toBe(store.root)
    expect(await mode(sessionFolder)).toBe(0o700)

    // Same session, same folder, another name; another session, another folder.
    const second = await store.save({ sessionId: 's-1', text: 'x', label: 'grep' })
    expect(path.dirname(second.path)).toBe(sessionFolder)
    expect(second.path).not.toBe(saved.path)
    const other = await store.save({ sessionId: 's-2', text: 'y', label: 'Weird Label/../../x' })
    expect(path.dirname(other.path)).not.toBe(sessionFolder)
    expect(path.dirname(path.dirname(other.path))).toBe(store.root)
    expect(path.basename(other.path)).toMatch(/^[0-9a-f]{32}-weird-label-x\.txt$/)
    expect(await mode(other.path)).toBe(0o600)
    expect(await mode(path.dirname(other.path))).toBe(0o700)
  })

  it('is never world- or group-readable, whatever the umask', async () => {
    const previous = process.umask(0)
    try {
      const { store } = await start()
      const saved = await store.save({ sessionId: 's', text: 'secret', label: 'x' })
      expect(await mode(store.root)).toBe(0o700)
      expect(await mode(path.dirname(saved.path))).toBe(0o700)
      expect(await mode(saved.path)).toBe(0o600)
    } finally {
      process.umask(previous)
    }
  })

  it('removes everything on dispose', async () => {
    const { fiber, store } = await start()
    const saved = await store.save({ sessionId: 's', text: 'bye', label: 'l' })
    await fiber.dispose()
    await expect(stat(saved.path)).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(stat(store.root)).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(store.save({ sessionId: 's', text: 'late', label: 'l' })).rejects.toThrow('disposed')
  })

  it('keeps the files with keepOnDispose', async () => {
    const { fiber, store } = await start({ keepOnDispose: true })
    const saved = await store.save({ sessionId: 's', text: 'kept', label: 'l' })
    await fiber.dispose()
    try {
      expect(await readFile(saved.path, 'utf8')).toBe('kept')
    } finally {
      await rm(store.root, { recursive: true, force: true })
    }
  })

  it('uses a configured root, makes it 0700, and removes it on dispose when it created it', async () => {
    const configured = path.join(scratch, 'a', 'spill')
    const { fiber, store } = await start({ root: configured })
    expect(store.root).toBe(configured)
    expect(await mode(configured)).toBe(0o700)
    const saved = await store.save({ sessionId: 's', text: 'z', label: '' })
    expect(path.basename(saved.path)).toMatch(/^[0-9a-f]{32}\.txt$/)
    expect(await mode(saved.path)).toBe(0o600)
    await fiber.dispose()
    await expect(stat(configured)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('tightens an existing configured root and leaves it, and other files in it, in place on dispose', async () => {
    const configured = path.join(scratch, 'existing')
    await mkdir(configured, { mode: 0o755 })
    await writeFile(path.join(configured, 'mine.txt'), 'not spill')
    const { fiber, store } = await start({ root: configured })
    expect(await mode(configured)).toBe(0o700)
    const saved = await store.save({ sessionId: 's', text: 'z', label: 'x' })
    await fiber.dispose()
    await expect(stat(saved.path)).rejects.toMatchObject({ code: 'ENOENT' })
    expect(await readdir(configured)).toEqual(['mine.txt'])
  })

  it('refuses a relative root and malformed requests', async () => {
    const fiber = root.plugin(spill, { root: 'relative/spill', keepOnDispose: false })
    let failure = ''
    try {
      await fiber
    } catch (error) {
      failure = (error as Error).message
    }
    expect(failure).toBe('spill: root must be an absolute path, got "relative/spill"')
    expect(root.get('spill')).toBeUndefined()
    await fiber.dispose()

    const { store } = await start()
    await expect(store.save({ sessionId: '', text: 'x', label: 'l' })).rejects.toThrow('sessionId')
    await expect(store.save({ sessionId: 's', text: 42 as unknown as string, label: 'l' })).rejects.toThrow(
      'text must be a string',
    )
    expect(store.root).toBe('') // refused requests made no folder
  })
})
