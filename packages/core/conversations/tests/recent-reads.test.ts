import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import type { SessionId } from '@dsh/session'
import type { OpenedLog } from '@dsh/session-persistence'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { RecentReads } from '../src/recent-reads.ts'

let dir: string
let file: string
let opens: number
let clock: number
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'dsh-recent-reads-'))
  file = path.join(dir, 's1.jsonl')
  await writeFile(file, 'header\nevent 0\n')
  opens = 0
  clock = 1_000
})
afterEach(() => rm(dir, { recursive: true, force: true }))

/** Opens "the log": a fresh object per call, as a provider's parse would return. */
const open =
  (logFile = file) =>
  async (): Promise<OpenedLog> => {
    opens++
    return { meta: { id: 's1' as SessionId, createdAt: 1, cwd: '/w' }, events: [], problems: [], file: logFile }
  }

describe('RecentReads', () => {
  it('reads a log once for the requests of one opening, and again once it changed', async () => {
    const reads = new RecentReads(10_000, 2, () => clock)
    const first = await reads.read('s1', open())
    expect(await reads.read('s1', open())).toBe(first)
    expect(opens).toBe(1)
    await appendFile(file, 'event 1\n')
    const second = await reads.read('s1', open())
    expect(second).not.toBe(first)
    expect(opens).toBe(2)
    await rm(file) // sealed or deleted: the plain file is gone
    await reads.read('s1', open())
    expect(opens).toBe(3)
  })

  it('reads again after its time, keeps no failed read, and keeps only the last few logs', async () => {
    const reads = new RecentReads(10_000, 2, () => clock)
    await reads.read('s1', open())
    clock += 10_000
    await reads.read('s1', open())
    expect(opens).toBe(2)

    const failing = async (): Promise<OpenedLog> => {
      opens++
      throw new Error('no such session')
    }
    await expect(reads.read('s2', failing)).rejects.toThrow('no such session')
    await expect(reads.read('s2', failing)).rejects.toThrow('no such session')
    expect(opens).toBe(4)

    const other = path.join(dir, 'other.jsonl')
    await writeFile(other, 'header\n')
    await reads.read('s3', open(other))
    await reads.read('s4', open(other))
    expect(opens).toBe(6)
    await reads.read('s1', open()) // pushed out by s3 and s4
    expect(opens).toBe(7)
    await reads.read('s4', open(other))
    expect(opens).toBe(7)
  })
})
