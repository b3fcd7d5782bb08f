import { stat } from 'node:fs/promises'
import type { OpenedLog } from '@dsh/session-persistence'

interface Read {
  log: OpenedLog
  /** The log file as it was just after the read. */
  size: number
  mtimeMs: number
}

/**
 * Stored logs read in the last few seconds. Opening a stored session in the
 * app reads its log three times within a second or so (the recent part, the
 * socket's replay, the earlier part); this makes that one read. A read is
 * reused only while its file has the same size and modification time, so a
 * log written since (resumed here, sealed, deleted, or appended by another
 * process) is read again. A failed read is not kept.
 */
export class RecentReads {
  private readonly reads = new Map<string, { read: Promise<Read>; at: number }>()

  constructor(
    private readonly keepMs = 10_000,
    /** Logs kept at once; a parsed log can take tens of MB. */
    private readonly max = 2,
    private readonly now: () => number = Date.now,
  ) {}

  async read(id: string, open: () => Promise<OpenedLog>): Promise<OpenedLog> {
    const kept = this.reads.get(id)
    if (kept && this.now() - kept.at < this.keepMs) {
      const read = await kept.read.catch(() => undefined)
      if (read && (await unchanged(read))) return read.log
    }
    const read = open().then(async (log) => {
      // Gone already (sealed or deleted meanwhile): the read is used once, never again.
      const info = await stat(log.file).catch(() => undefined)
      return { log, size: info?.size ?? -1, mtimeMs: info?.mtimeMs ?? -1 }
    })
    this.reads.delete(id)
    this.reads.set(id, { read, at: this.now() })
    for (const old of this.reads.keys()) {
      if (this.reads.size <= this.max) break
      this.reads.delete(old)
    }
    read.catch(() => {
      if (this.reads.get(id)?.read === read) this.reads.delete(id)
    })
    return (await read).log
  }
}

async function unchanged(read: Read): Promise<boolean> {
  const info = await stat(read.log.file).catch(() => undefined)
  return info !== undefined && read.size >= 0 && info.size === read.size && info.mtimeMs === read.mtimeMs
}
