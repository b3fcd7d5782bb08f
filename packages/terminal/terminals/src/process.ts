import { constants } from 'node:os'
import { delay, isLive, isRunning, readProcessTable } from '@dsh/subprocess'

/**
 * `env` (built by the environment policy) without the size variables of the
 * terminal dsh itself runs in: the PTY has its own size.
 */
export function withoutSize(env: Record<string, string>): Record<string, string> {
  const { COLUMNS: _columns, LINES: _lines, ...rest } = env
  return rest
}

/** The name of a signal number (`9` is `SIGKILL`); undefined for 0 or an unknown number. */
export function signalName(signal: number | undefined): NodeJS.Signals | undefined {
  if (!signal) return undefined
  for (const [name, number] of Object.entries(constants.signals)) if (number === signal) return name as NodeJS.Signals
  return undefined
}

/**
 * The live processes of a session (Linux, from /proc): every process whose
 * session id is `sid`, whatever its process group (an interactive shell puts
 * each job in a group of its own). Zombies do not count: an orphan whose new
 * parent never reaps it is dead all the same.
 */
export async function sessionMembers(sid: number): Promise<number[]> {
  if (process.platform !== 'linux') return (await isRunning(sid)) ? [sid] : []
  const members: number[] = []
  for (const entry of (await readProcessTable()).values())
    if (entry.session === sid && isLive(entry)) members.push(entry.pid)
  return members
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // Already gone.
  }
}

/**
 * Stops every process of the session led by `sid` and waits until none is
 * left: SIGHUP (an interactive shell exits on it, and hands it to its jobs),
 * SIGTERM and SIGCONT (so stopped jobs see the SIGTERM) to every member;
 * after `graceMs`, SIGKILL to whoever is left, repeated for processes forked
 * meanwhile. Resolves true once the session is empty, false if members
 * survived SIGKILL for `max(graceMs, 2000)` ms (stuck in the kernel).
 */
export async function killSession(sid: number, graceMs: number): Promise<boolean> {
  let members = await sessionMembers(sid)
  if (members.length === 0) return true
  for (const pid of members) {
    signal(pid, 'SIGHUP')
    signal(pid, 'SIGTERM')
    signal(pid, 'SIGCONT')
  }
  const graceEnd = Date.now() + graceMs
  for (;;) {
    members = await sessionMembers(sid)
    if (members.length === 0) return true
    if (Date.now() >= graceEnd) break
    await delay(20)
  }
  const killEnd = Date.now() + Math.max(graceMs, 2_000)
  for (;;) {
    for (const pid of members) signal(pid, 'SIGKILL')
    await delay(20)
    members = await sessionMembers(sid)
    if (members.length === 0) return true
    if (Date.now() >= killEnd) return false
  }
}
