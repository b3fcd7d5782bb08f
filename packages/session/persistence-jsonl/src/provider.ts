import type { FileHandle } from 'node:fs/promises'
import { mkdir, open, readdir, readFile, rm, stat } from 'node:fs/promises'
import { statSync } from 'node:fs'
import path from 'node:path'
import type { Context } from '@dsh/cordis'
import type { SessionEvent, SessionId, SessionMeta } from '@dsh/session'
import {
  type ListOptions,
  type LogProblem,
  type OpenedLog,
  SessionLogError,
  SessionLogVersionError,
  SessionNotFoundError,
  type SessionHolder,
  SessionPersistence,
  type StoredSession,
} from '@dsh/session-persistence'
import {
  completeLength,
  isMissing,
  isTempName,
  linesBackward,
  publishFile,
  readFirstLine,
  syncDir,
  writeAll,
  zstd,
} from './files.ts'
import { acquireLease, checkNotHeldElsewhere, liveHolder, releaseLease } from './lease.ts'

/** The log format this dsh writes and the newest it reads. */
export const SESSION_LOG_FORMAT = 1

const PLAIN = '.jsonl'
const SEALED = '.jsonl.zst'
const LEASE = '.lock'
/** How many headers `list()` reads at once. */
const LIST_CONCURRENCY = 16
/** Files `list({ changedSince })` stats between two turns of the event loop. */
const STAT_SLICE = 500

export interface JsonlPersistenceConfig {
  /** The folder holding one log per session. */
  root: string
}

/** The write side of one log kept open between appends. */
interface Tail {
  handle: FileHandle
  /** Bytes in the file, all of them complete lines. */
  size: number
  /** Seq of the last readable event; -1 when the log has only its header. */
  lastSeq: number
  dev: number
  ino: number
}

interface Located {
  file: string
  sealed: boolean
}

const ID_CHARS = /^[A-Za-z0-9._:@+=-]{1,200}$/

/** Throws unless `id` is safe to use as a file name inside the root. */
export function checkSessionId(id: string): string {
  if (typeof id !== 'string' || !ID_CHARS.test(id) || id.startsWith('.') || id.includes('..')) {
    throw new Error(
      `invalid session id ${JSON.stringify(id)}: use letters, digits and . _ : @ + = - (no path separators, no "..", not starting with ".")`,
    )
  }
  return id
}

/** Throws unless `root` is an absolute path; returns it normalized. */
export function checkRoot(root: unknown): string {
  if (typeof root !== 'string' || !path.isAbsolute(root)) {
    throw new Error(`session-persistence-jsonl: root must be an absolute path, got ${JSON.stringify(root)}`)
  }
  return path.normalize(root)
}

function isValidId(id: string): boolean {
  try {
    checkSessionId(id)
    return true
  } catch {
    return false
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function headerLine(meta: SessionMeta): string {
  return `${JSON.stringify({ type: 'session', format: SESSION_LOG_FORMAT, ...meta })}\n`
}

function eventLines(events: readonly SessionEvent[]): string {
  let out = ''
  for (const event of events) out += `${JSON.stringify(event)}\n`
  return out
}

/** Parses and checks line 1 of a log; returns the session's meta. */
function parseHeader(file: string, line: string | undefined, id: string): SessionMeta {
  if (line === undefined) throw new SessionLogError(file, 'line 1: no complete header line')
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch (error) {
    throw new SessionLogError(file, `line 1: the header is not valid JSON (${message(error)})`)
  }
  if (!isRecord(value) || value.type !== 'session') throw new SessionLogError(file, 'line 1 is not a session header')
  const format = value.format
  if (typeof format !== 'number' || !Number.isSafeInteger(format) || format < 1) {
    throw new SessionLogError(file, `line 1: the header has no valid format version (${JSON.stringify(format)})`)
  }
  if (format > SESSION_LOG_FORMAT) {
    throw new SessionLogVersionError(
      file,
      `written by a newer dsh (log format ${format}; this dsh reads up to ${SESSION_LOG_FORMAT}); upgrade dsh to open it`,
    )
  }
  if (value.id !== id)
    throw new SessionLogError(file, `line 1: the header names session ${JSON.stringify(value.id)}, not ${id}`)
  if (typeof value.createdAt !== 'number' || typeof value.cwd !== 'string') {
    throw new SessionLogError(file, 'line 1: the header lacks createdAt or cwd')
  }
  const meta: SessionMeta = { id: id as SessionId, createdAt: value.createdAt, cwd: value.cwd }
  if (typeof value.parentSession === 'string') meta.parentSession = value.parentSession as SessionId
  if (typeof value.forkedFrom === 'string') meta.forkedFrom = value.forkedFrom as SessionId
  if (typeof value.seedLength === 'number') meta.seedLength = value.seedLength
  if (typeof value.title === 'string') meta.title = value.title
  return meta
}

/** Why a parsed line is not a session event, or undefined when it is one. */
function eventShapeProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return 'not a JSON object'
  if (typeof value.seq !== 'number' || !Number.isSafeInteger(value.seq) || value.seq < 0) return 'no valid seq'
  if (typeof value.type !== 'string') return 'no event type'
  if (typeof value.time !== 'number') return 'no time'
  if (!('data' in value)) return 'no data'
  return undefined
}

/** Splits a whole log into meta, readable events and problems. */
export function parseLog(file: string, text: string, id: string): OpenedLog {
  const lines = text.split('\n')
  const torn = lines.pop() ?? ''
  const meta = parseHeader(file, lines[0], id)
  const events: SessionEvent[] = []
  const problems: LogProblem[] = []
  const report = (line: number, what: string) => problems.push({ line, message: `${file}:${line}: ${what}` })
  let last = -1
  for (let i = 1; i < lines.length; i++) {
    const n = i + 1
    const line = lines[i] as string
    if (line.trim() === '') {
      report(n, 'empty line')
      continue
    }
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch (error) {
      report(n, `invalid JSON, line skipped (${message(error)})`)
      continue
    }
    const shape = eventShapeProblem(value)
    if (shape) {
      report(n, `not a session event (${shape}), line skipped`)
      continue
    }
    const event = value as unknown as SessionEvent
    if (event.seq <= last) {
      report(n, `event seq ${event.seq} does not follow ${last}, line skipped`)
      continue
    }
    events.push(event)
    last = event.seq
  }
  if (torn !== '')
    report(
      lines.length + 1,
      'the last line is incomplete (the writer stopped mid-line); it is dropped before the next append',
    )
  return { meta, events, problems, file }
}

/**
 * `ctx.sessionPersistence` over one JSONL file per session:
 * `<root>/<id>.jsonl`, or `<root>/<id>.jsonl.zst` once sealed.
 */
export class JsonlSessionPersistence extends SessionPersistence {
  readonly root: string
  private readonly tails = new Map<string, Tail>()
  private readonly locks = new Map<string, Promise<void>>()
  /** The sessions whose lease this provider holds (see lease.ts). */
  private readonly leases = new Set<string>()
  private disposed = false
  private readonly logger = this.home.logger('session-persistence-jsonl')

  constructor(ctx: Context, config: JsonlPersistenceConfig) {
    super(ctx)
    this.root = checkRoot(config?.root)
    ctx.effect(() => () => this.closeAll(), 'session-persistence-jsonl handles')
  }

  /** The plain log of `id`. */
  plainPath(id: string): string {
    return path.join(this.root, checkSessionId(id) + PLAIN)
  }

  /** The sealed log of `id`. */
  sealedPath(id: string): string {
    return path.join(this.root, checkSessionId(id) + SEALED)
  }

  /** The lease of `id`: which process has the session open. */
  leasePath(id: string): string {
    return path.join(this.root, checkSessionId(id) + LEASE)
  }

  override async claim(id: SessionId): Promise<void> {
    checkSessionId(id)
    await this.exclusive(id, () => this.hold(id))
  }

  override async release(id: SessionId): Promise<void> {
    checkSessionId(id)
    await this.exclusive(id, () => this.letGo(id))
  }

  override async holder(id: SessionId): Promise<SessionHolder | undefined> {
    return liveHolder(this.leasePath(id))
  }

  private async hold(id: string): Promise<void> {
    if (this.leases.has(id)) return
    await mkdir(this.root, { recursive: true, mode: 0o700 })
    await acquireLease(this.leasePath(id), id)
    this.leases.add(id)
  }

  private async letGo(id: string): Promise<void> {
    if (this.leases.delete(id)) await releaseLease(this.leasePath(id))
  }

  async append(meta: SessionMeta, events: readonly SessionEvent[]): Promise<void> {
    const id = checkSessionId(meta.id)
    for (let i = 1; i < events.length; i++) {
      const [a, b] = [events[i - 1] as SessionEvent, events[i] as SessionEvent]
      if (b.seq <= a.seq)
        throw new SessionLogError(
          this.plainPath(id),
          `cannot append: event seq ${b.seq} follows ${a.seq} in the same batch`,
        )
    }
    await this.exclusive(id, async () => {
      try {
        await this.hold(id)
        const tail = await this.attach(id)
        // No events for an existing log: nothing to write. For a new one: the header alone.
        if (tail) {
          if (events.length) await this.appendTo(id, tail, events)
        } else await this.create(meta, events)
      } finally {
        // Disposed: keep nothing open between operations.
        if (this.disposed) {
          await this.forget(id)
          await this.letGo(id)
        }
      }
    })
  }

  private async appendTo(id: string, tail: Tail, events: readonly SessionEvent[]): Promise<void> {
    const first = events[0] as SessionEvent
    if (first.seq !== tail.lastSeq + 1) {
      throw new SessionLogError(
        this.plainPath(id),
        `cannot append event ${first.seq}: the log ends at seq ${tail.lastSeq}, so the next event must be ${tail.lastSeq + 1}`,
      )
    }
    const data = Buffer.from(eventLines(events))
    try {
      await writeAll(tail.handle, data)
      await tail.handle.sync()
    } catch (error) {
      // Roll back to the last complete batch; if that fails too, the next attach drops a torn tail.
      await tail.handle.truncate(tail.size).catch(() => {})
      await this.forget(id)
      throw error
    }
    tail.size += data.length
    tail.lastSeq = (events.at(-1) as SessionEvent).seq
  }

  async open(id: SessionId): Promise<OpenedLog> {
    checkSessionId(id)
    return this.exclusive(id, async () => {
      const located = await this.locate(id)
      return parseLog(located.file, await this.readText(located), id)
    })
  }

  async list(options: ListOptions = {}): Promise<StoredSession[]> {
    let names: string[]
    try {
      names = await readdir(this.root)
    } catch (error) {
      if (isMissing(error)) return []
      throw error
    }
    const files = new Map<string, string[]>()
    for (const name of names) {
      if (isTempName(name)) continue
      const id = name.endsWith(SEALED)
        ? name.slice(0, -SEALED.length)
        : name.endsWith(PLAIN)
          ? name.slice(0, -PLAIN.length)
          : undefined
      if (id !== undefined && isValidId(id)) files.set(id, [...(files.get(id) ?? []), name])
    }
    const { changedSince } = options
    const queue = changedSince === undefined ? [...files.keys()] : await this.changedIds(files, changedSince)
    const out: StoredSession[] = []
    const worker = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          out.push(await this.stat(id as SessionId))
        } catch (error) {
          if (error instanceof SessionNotFoundError) continue // deleted meanwhile
          this.logger.warn('skipping session %s in %s: %s', id, this.root, message(error))
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, queue.length) }, worker))
    return out.sort((a, b) => b.updatedAt - a.updatedAt || a.id.localeCompare(b.id))
  }

  /**
   * The ids with a file modified at or after `time`. The stats run
   * synchronously in slices with a yield between them: a promise per file
   * costs several times more than the stat itself.
   */
  private async changedIds(files: ReadonlyMap<string, readonly string[]>, time: number): Promise<string[]> {
    const changed: string[] = []
    let statted = 0
    for (const [id, names] of files) {
      if (
        names.some(
          (name) =>
            (statSync(path.join(this.root, name), { throwIfNoEntry: false })?.mtimeMs ?? Number.NEGATIVE_INFINITY) >=
            time,
        )
      )
        changed.push(id)
      statted += names.length
      if (statted >= STAT_SLICE) {
        statted = 0
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    return changed
  }

  async stat(id: SessionId): Promise<StoredSession> {
    checkSessionId(id)
    return this.exclusive(id, async () => {
      const located = await this.locate(id)
      const info = await stat(located.file)
      const meta = parseHeader(
        located.file,
        await readFirstLine(located.file, located.sealed, undefined, info.size),
        id,
      )
      return { ...meta, file: located.file, updatedAt: info.mtimeMs, bytes: info.size, sealed: located.sealed }
    })
  }

  async export(id: SessionId): Promise<string> {
    checkSessionId(id)
    return this.exclusive(id, async () => this.readText(await this.locate(id)))
  }

  async seal(id: SessionId): Promise<void> {
    checkSessionId(id)
    await this.exclusive(id, async () => {
      await this.forget(id)
      const plain = this.plainPath(id)
      let data: Buffer
      try {
        data = await readFile(plain)
      } catch (error) {
        if (!isMissing(error)) throw error
        await this.locate(id) // already sealed: nothing to do; unknown: not found
        return
      }
      await publishFile(this.sealedPath(id), (await zstd()).compress(data))
      await rm(plain)
      await syncDir(this.root)
    })
  }

  async delete(id: SessionId): Promise<void> {
    checkSessionId(id)
    await this.exclusive(id, async () => {
      if (!this.leases.has(id)) await checkNotHeldElsewhere(this.leasePath(id), id)
      await this.forget(id)
      let removed = false
      for (const file of [this.plainPath(id), this.sealedPath(id)]) {
        try {
          await rm(file)
          removed = true
        } catch (error) {
          if (!isMissing(error)) throw error
        }
      }
      if (!removed) throw new SessionNotFoundError(id, this.root)
      await this.letGo(id)
      await syncDir(this.root)
    })
  }

  /** Runs `task` after every earlier operation on `id` has settled. */
  private exclusive<T>(id: string, task: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve()
    const run = previous.then(task)
    const settled = run.then(
      () => {},
      () => {},
    )
    this.locks.set(id, settled)
    void settled.then(() => {
      if (this.locks.get(id) === settled) this.locks.delete(id)
    })
    return run
  }

  /** The log of `id` (the plain file wins when a crash left both). */
  private async locate(id: string): Promise<Located> {
    for (const located of [
      { file: this.plainPath(id), sealed: false },
      { file: this.sealedPath(id), sealed: true },
    ]) {
      try {
        await stat(located.file)
        return located
      } catch (error) {
        if (!isMissing(error)) throw error
      }
    }
    throw new SessionNotFoundError(id, this.root)
  }

  private async readText(located: Located): Promise<string> {
    const data = await readFile(located.file)
    return (located.sealed ? (await zstd()).decompress(data) : data).toString('utf8')
  }

  /**
   * The open write side of `id`'s log, unsealing it and dropping a torn
   * last line first; `undefined` when there is no log (or only an empty
   * or header-less file) yet.
   */
  private async attach(id: string): Promise<Tail | undefined> {
    const file = this.plainPath(id)
    const cached = this.tails.get(id)
    if (cached) {
      const now = await stat(file).catch((error: unknown) => {
        if (isMissing(error)) return undefined
        throw error
      })
      if (now && now.dev === cached.dev && now.ino === cached.ino && now.size === cached.size) return cached
      await this.forget(id) // changed behind our back: read it again
    }
    const sealed = this.sealedPath(id)
    try {
      await stat(file)
      await rm(sealed, { force: true }) // a crash between unseal and cleanup left a stale copy
    } catch (error) {
      if (!isMissing(error)) throw error
      try {
        await this.unseal(id)
      } catch (unsealError) {
        if (isMissing(unsealError)) return undefined
        throw unsealError
      }
    }
    const handle = await open(file, 'a+')
    try {
      const info = await handle.stat()
      const size = await completeLength(handle, info.size)
      if (size < info.size) {
        await handle.truncate(size)
        await handle.sync()
        this.logger.warn('%s: dropped an incomplete last line (%d bytes) before appending', file, info.size - size)
      }
      let lastSeq: number | undefined
      if (size > 0) {
        parseHeader(file, await readFirstLine(file, false), id)
        for await (const line of linesBackward(handle, size)) {
          if (line.start === 0) {
            lastSeq = -1
            break
          }
          let value: unknown
          try {
            value = JSON.parse(line.text)
          } catch {
            continue
          }
          if (eventShapeProblem(value) === undefined) {
            lastSeq = (value as SessionEvent).seq
            break
          }
        }
      }
      if (lastSeq === undefined) {
        // Nothing usable in it (an empty file, or the header itself was cut): create replaces it.
        await handle.close()
        return undefined
      }
      const tail: Tail = { handle, size, lastSeq, dev: info.dev, ino: info.ino }
      this.tails.set(id, tail)
      return tail
    } catch (error) {
      await handle.close().catch(() => {})
      throw error
    }
  }

  /** Writes a new log: header plus the first events, published atomically. */
  private async create(meta: SessionMeta, events: readonly SessionEvent[]): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o700 })
    const file = this.plainPath(meta.id)
    await publishFile(file, Buffer.from(headerLine(meta) + eventLines(events)))
  }

  /** Turns `<id>.jsonl.zst` back into `<id>.jsonl` (throws ENOENT when there is none). */
  private async unseal(id: string): Promise<void> {
    const sealed = this.sealedPath(id)
    // Read first: a new session has no sealed log, and needs no zstd.
    const compressed = await readFile(sealed)
    const data = (await zstd()).decompress(compressed)
    await publishFile(this.plainPath(id), data)
    await rm(sealed)
    await syncDir(this.root)
  }

  /** Closes the cached write side of `id`, if any. */
  private async forget(id: string): Promise<void> {
    const tail = this.tails.get(id)
    if (!tail) return
    this.tails.delete(id)
    await tail.handle.close().catch(() => {})
  }

  private async closeAll(): Promise<void> {
    this.disposed = true
    const ids = new Set([...this.tails.keys(), ...this.leases])
    await Promise.all(
      [...ids].map((id) =>
        this.exclusive(id, async () => {
          await this.forget(id)
          await this.letGo(id)
        }),
      ),
    )
  }
}
