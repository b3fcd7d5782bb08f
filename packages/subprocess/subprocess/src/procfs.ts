import { readdir, readFile } from 'node:fs/promises'

/** One process as /proc shows it (Linux). `start` is the start time in clock ticks: with the pid it names one process. */
export interface ProcessEntry {
  pid: number
  ppid: number
  pgrp: number
  /** The session id: the pid of the session leader. */
  session: number
  state: string
  start: string
}

/** Zombies (`Z`) and dead entries (`X`) no longer run: an orphan whose new parent never reaps it stays a zombie forever. */
export function isLive(entry: ProcessEntry): boolean {
  return entry.state !== 'Z' && entry.state !== 'X'
}

/** Whether a process runs: it exists and is not a zombie (Linux; elsewhere, whether it can be signalled). */
export async function isRunning(pid: number): Promise<boolean> {
  if (process.platform !== 'linux') {
    try {
      process.kill(pid, 0)
      return true
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM'
    }
  }
  const entry = await readProcessEntry(pid)
  return entry !== undefined && isLive(entry)
}

/** Every process in /proc, keyed by pid. */
export async function readProcessTable(): Promise<Map<number, ProcessEntry>> {
  const table = new Map<number, ProcessEntry>()
  let names: string[]
  try {
    names = await readdir('/proc')
  } catch {
    return table
  }
  await Promise.all(
    names.map(async (name) => {
      if (!/^\d+$/.test(name)) return
      const entry = await readProcessEntry(Number(name))
      if (entry) table.set(entry.pid, entry)
    }),
  )
  return table
}

/** The /proc entry of one process; undefined when it is gone. */
export async function readProcessEntry(pid: number): Promise<ProcessEntry | undefined> {
  let stat: string
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The command name is in parentheses and may itself contain spaces or parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return {
    pid,
    state: fields[0] ?? '',
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
    start: fields[19] ?? '',
  }
}

/**
 * The processes that belong to one command: its process group, plus every
 * descendant of a member even when it moved to another group or session
 * (bubblewrap puts the sandboxed command in a new session). Members are
 * remembered by pid and start time, so a member that was reparented after
 * its parent died is still tracked, and a reused pid is not.
 */
export class ProcessTree {
  private readonly members = new Map<number, string>()

  constructor(readonly pgid: number) {}

  /** Adds one known process (the leader, while it has not been reaped). */
  seed(table: Map<number, ProcessEntry>, pid: number): void {
    const entry = table.get(pid)
    if (entry && isLive(entry)) this.members.set(pid, entry.start)
  }

  /** Refreshes the membership from a fresh table and returns the live members. */
  update(table: Map<number, ProcessEntry>): number[] {
    for (const [pid, start] of this.members) {
      const entry = table.get(pid)
      if (!entry || !isLive(entry) || entry.start !== start) this.members.delete(pid)
    }
    const children = new Map<number, ProcessEntry[]>()
    for (const entry of table.values()) {
      if (!isLive(entry)) continue
      if (entry.pgrp === this.pgid) this.members.set(entry.pid, entry.start)
      const list = children.get(entry.ppid)
      if (list) list.push(entry)
      else children.set(entry.ppid, [entry])
    }
    const queue = [...this.members.keys()]
    while (queue.length > 0) {
      const parent = queue.pop() as number
      for (const child of children.get(parent) ?? []) {
        if (this.members.has(child.pid)) continue
        this.members.set(child.pid, child.start)
        queue.push(child.pid)
      }
    }
    return [...this.members.keys()]
  }
}

export interface KillTreeOptions {
  /** The leader; also the process group id. */
  pid: number
  /** Whether the leader may still run (it has not been reaped yet). */
  leaderAlive: boolean
  /** SIGTERM to SIGKILL. */
  graceMs: number
  /** How often liveness is checked. */
  pollMs: number
  /** After SIGKILL, how long to wait for the tree to vanish before giving up. */
  waitMs: number
}

/**
 * Stops a command's whole tree: SIGTERM to the group and every member, then
 * SIGKILL to whatever is left after the grace, and waits until no member
 * runs. Processes that join the tree meanwhile get the signal of the current
 * phase. Resolves true once the tree is gone, false if it outlived `waitMs`
 * after SIGKILL.
 */
export async function killTree(options: KillTreeOptions): Promise<boolean> {
  const { pid: pgid } = options
  if (process.platform !== 'linux') return killGroupPortable(options)
  const tree = new ProcessTree(pgid)
  // Take the snapshot before signalling: once the leader dies its children are reparented and the link to them is lost.
  let table = await readProcessTable()
  if (options.leaderAlive) tree.seed(table, pgid)
  const signalled = { SIGTERM: new Set<number>(), SIGKILL: new Set<number>() }
  let phase: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'
  let deadline = Date.now() + options.graceMs
  sendSignal(-pgid, phase)
  for (;;) {
    const live = tree.update(table)
    if (live.length === 0) return true
    for (const member of live) {
      if (signalled[phase].has(member)) continue
      signalled[phase].add(member)
      sendSignal(member, phase)
    }
    if (Date.now() >= deadline) {
      if (phase === 'SIGKILL') return false
      phase = 'SIGKILL'
      deadline = Date.now() + options.waitMs
      sendSignal(-pgid, phase)
      continue
    }
    await delay(options.pollMs)
    table = await readProcessTable()
  }
}

/** Whether any live (non-zombie) process is left in the group. */
export async function groupAlive(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
  if (process.platform !== 'linux') return true
  for (const entry of (await readProcessTable()).values()) {
    if (entry.pgrp === pgid && isLive(entry)) return true
  }
  return false
}

async function killGroupPortable(options: KillTreeOptions): Promise<boolean> {
  const gone = async (withinMs: number): Promise<boolean> => {
    const deadline = Date.now() + withinMs
    for (;;) {
      if (!(await groupAlive(options.pid))) return true
      if (Date.now() >= deadline) return false
      await delay(options.pollMs)
    }
  }
  sendSignal(-options.pid, 'SIGTERM')
  if (await gone(options.graceMs)) return true
  sendSignal(-options.pid, 'SIGKILL')
  return gone(options.waitMs)
}

function sendSignal(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal)
  } catch {
    // Already gone, or not ours to signal.
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
