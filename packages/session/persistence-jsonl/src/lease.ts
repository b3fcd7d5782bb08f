// A session's lease: the file `<id>.lock` beside its log says which dsh
// process has the session open and may write the log. It is created whole
// (written under a temp name, then hard-linked into place, which fails when
// the name exists), so a reader never sees half of one.
import { readFileSync } from 'node:fs'
import { link, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import { randomBytes } from 'node:crypto'
import { SessionBusyError, type SessionHolder } from '@dsh/session-persistence'
import { isMissing } from './files.ts'

interface LeaseRecord extends SessionHolder {
  /** The holder's start time in clock ticks since boot (Linux), which tells a reused pid apart. */
  start?: string
}

/** Takeovers of a stale lease tried before giving up as busy (another process keeps winning the race). */
const ATTEMPTS = 5

/** Field 22 of `/proc/<pid>/stat`, or undefined where there is no such file. */
function startTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}

let self: LeaseRecord | undefined
function selfRecord(): LeaseRecord {
  self ??= {
    pid: process.pid,
    host: os.hostname(),
    since: 0,
    ...(startTicks(process.pid) ? { start: startTicks(process.pid) } : {}),
  }
  return self
}

function parseRecord(text: string): LeaseRecord | undefined {
  try {
    const value = JSON.parse(text) as Partial<LeaseRecord>
    if (!Number.isInteger(value.pid) || typeof value.host !== 'string' || typeof value.since !== 'number')
      return undefined
    return value as LeaseRecord
  } catch {
    return undefined
  }
}

function isThisProcess(record: LeaseRecord): boolean {
  const me = selfRecord()
  return record.pid === me.pid && record.host === me.host && record.start === me.start
}

/** Whether the process a record names is certainly gone (on this host: no such pid, or the pid now belongs to a later process). */
function isGone(record: LeaseRecord): boolean {
  if (record.host !== selfRecord().host) return false
  try {
    process.kill(record.pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true
  }
  const start = startTicks(record.pid)
  return record.start !== undefined && start !== undefined && start !== record.start
}

/** The lease's record, or undefined when there is none; `null` when the file holds no readable record. */
async function readRecord(file: string): Promise<{ text: string; record: LeaseRecord | null } | undefined> {
  try {
    const text = await readFile(file, 'utf8')
    return { text, record: parseRecord(text) ?? null }
  } catch (error) {
    if (isMissing(error)) return undefined
    throw error
  }
}

/** Creates the lease file whole; false when one exists. */
async function create(file: string): Promise<boolean> {
  const temp = `${file}.tmp-${randomBytes(6).toString('hex')}`
  await writeFile(temp, `${JSON.stringify({ ...selfRecord(), since: Date.now() })}\n`, { flag: 'wx', mode: 0o600 })
  try {
    await link(temp, file)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  } finally {
    await rm(temp, { force: true })
  }
}

/**
 * Moves a stale lease out of the way, unless it changed since it was read
 * (another process took it over meanwhile): then puts back what it moved.
 */
async function removeStale(file: string, staleText: string): Promise<void> {
  const aside = `${file}.stale-${randomBytes(6).toString('hex')}`
  try {
    await rename(file, aside)
  } catch (error) {
    if (isMissing(error)) return
    throw error
  }
  const moved = await readFile(aside, 'utf8').catch(() => staleText)
  if (moved !== staleText) await link(aside, file).catch(() => {}) // a fresh lease: restore it unless a newer one is there
  await rm(aside, { force: true })
}

/** A lease file with no readable record is stale once it is over a second old (its writer died between creating and writing it). */
async function isOldAndUnreadable(file: string): Promise<boolean> {
  const info = await stat(file).catch(() => undefined)
  return info !== undefined && Date.now() - info.mtimeMs > 1000
}

/**
 * What a lease that exists means for this process: `ours`, or `cleared`
 * (it was stale and is gone now). Throws `SessionBusyError` when another
 * live process holds it.
 */
async function settle(
  file: string,
  sessionId: string,
  current: { text: string; record: LeaseRecord | null },
): Promise<'ours' | 'cleared'> {
  const { record, text } = current
  if (record && isThisProcess(record)) return 'ours'
  const stale = record ? isGone(record) : await isOldAndUnreadable(file)
  if (!stale) throw new SessionBusyError(sessionId, record ?? undefined, file)
  await removeStale(file, text)
  return 'cleared'
}

/**
 * Takes the lease `file` for this process. Resolves when this process holds
 * it (already held counts); throws `SessionBusyError` when another live
 * process does. A stale lease (its process is gone, or it holds no readable
 * record and is over a second old) is taken over.
 */
export async function acquireLease(file: string, sessionId: string): Promise<void> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (await create(file)) return
    const current = await readRecord(file)
    if (current !== undefined && (await settle(file, sessionId, current)) === 'ours') return
  }
  const current = await readRecord(file)
  throw new SessionBusyError(sessionId, current?.record ?? undefined, file)
}

/** Removes the lease `file` if this process holds it. */
export async function releaseLease(file: string): Promise<void> {
  const current = await readRecord(file)
  if (current?.record && isThisProcess(current.record)) await rm(file, { force: true })
}

/** Throws `SessionBusyError` when another live process holds the lease `file`; removes a stale one. */
export async function checkNotHeldElsewhere(file: string, sessionId: string): Promise<void> {
  const current = await readRecord(file)
  if (current) await settle(file, sessionId, current)
}

/** The live process other than this one that holds the lease `file`, if any. */
export async function liveHolder(file: string): Promise<SessionHolder | undefined> {
  const record = (await readRecord(file))?.record
  if (!record || isThisProcess(record) || isGone(record)) return undefined
  return { pid: record.pid, host: record.host, since: record.since }
}
