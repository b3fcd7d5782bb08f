import { spawn } from 'node:child_process'
import { readdir, readFile } from 'node:fs/promises'

/** Names of variables that must not reach spawned commands: anything that looks like a credential. */
export const SENSITIVE_ENV_NAME = /KEY|SECRET|TOKEN|PASSWORD/i

/** A copy of `env` without the variables whose names look like credentials. */
export function scrubEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const clean: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !SENSITIVE_ENV_NAME.test(name)) clean[name] = value
  }
  return clean
}

/** Keeps the last `max` bytes of a stream and counts what it dropped. */
export class TailBuffer {
  private chunks: Buffer[] = []
  private size = 0
  private total = 0

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length
    this.chunks.push(chunk)
    this.size += chunk.length
    while (this.chunks.length > 1 && this.size - this.chunks[0]!.length >= this.max) {
      this.size -= this.chunks.shift()!.length
    }
  }

  /** The kept text (never starting inside a UTF-8 character) and how many bytes were dropped before it. */
  read(): { text: string; dropped: number } {
    let bytes = Buffer.concat(this.chunks)
    if (bytes.length > this.max) bytes = bytes.subarray(bytes.length - this.max)
    let start = 0
    if (bytes.length < this.total) while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start += 1
    bytes = bytes.subarray(start)
    return { text: bytes.toString('utf8'), dropped: this.total - bytes.length }
  }
}

export interface RunSpec {
  shell: string
  command: string
  cwd: string
  env: Record<string, string>
  timeoutMs: number
  signal: AbortSignal
  maxOutputBytes: number
  /** SIGTERM-to-SIGKILL grace, also the bound on draining pipes after the shell exits. */
  graceMs: number
}

export interface RunOutcome {
  stdout: { text: string; dropped: number }
  stderr: { text: string; dropped: number }
  exitCode: number | null
  signal: NodeJS.Signals | null
  timedOut: boolean
  aborted: boolean
  /** The process group that still has live members after the shell exited normally, if any. */
  lingeringGroup?: number
}

/**
 * Runs `shell -c command` as the leader of a new process group. A timeout or
 * an abort kills the whole group (SIGTERM, then SIGKILL after the grace) and
 * waits until no member is left.
 */
export async function runCommand(spec: RunSpec): Promise<RunOutcome> {
  const child = spawn(spec.shell, ['-c', spec.command], {
    cwd: spec.cwd,
    env: spec.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const stdout = new TailBuffer(spec.maxOutputBytes)
  const stderr = new TailBuffer(spec.maxOutputBytes)
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk))
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk))
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
    child.once('error', reject)
  })

  const pgid = child.pid
  let timedOut = false
  let aborted = false
  let stopping: Promise<void> | undefined
  const stop = () => {
    if (pgid !== undefined) stopping ??= killGroup(pgid, spec.graceMs)
  }
  const timer = setTimeout(() => {
    timedOut = true
    stop()
  }, spec.timeoutMs)
  const onAbort = () => {
    aborted = true
    stop()
  }
  if (spec.signal.aborted) onAbort()
  else spec.signal.addEventListener('abort', onAbort, { once: true })

  try {
    const exit = await exited
    // Background children may hold the pipes open; read what comes within the grace, then stop reading.
    await within(closed, spec.graceMs)
    if (stopping) await stopping
    child.stdout.destroy()
    child.stderr.destroy()
    const outcome: RunOutcome = {
      stdout: stdout.read(),
      stderr: stderr.read(),
      exitCode: exit.code,
      signal: exit.signal,
      timedOut,
      aborted,
    }
    if (!stopping && pgid !== undefined && (await groupAlive(pgid))) outcome.lingeringGroup = pgid
    return outcome
  } finally {
    clearTimeout(timer)
    spec.signal.removeEventListener('abort', onAbort)
  }
}

/** SIGTERM to the group, then SIGKILL if anyone is left after `graceMs`; resolves once the group is gone (bounded). */
export async function killGroup(pgid: number, graceMs: number): Promise<void> {
  signalGroup(pgid, 'SIGTERM')
  if (await waitGroupGone(pgid, graceMs)) return
  signalGroup(pgid, 'SIGKILL')
  await waitGroupGone(pgid, Math.max(graceMs, 1000))
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal)
  } catch {
    // Already gone.
  }
}

async function waitGroupGone(pgid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs
  for (;;) {
    if (!(await groupAlive(pgid))) return true
    if (Date.now() >= deadline) return false
    await delay(25)
  }
}

/**
 * Whether any live process is left in the group. On Linux, zombies do not
 * count: an orphan whose new parent never reaps it is dead all the same.
 */
export async function groupAlive(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
  if (process.platform !== 'linux') return true
  let entries: string[]
  try {
    entries = await readdir('/proc')
  } catch {
    return true
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const state = await processState(Number(entry))
    if (state && state.pgrp === pgid && state.state !== 'Z' && state.state !== 'X') return true
  }
  return false
}

/** The state letter and process group of a process, from /proc (Linux); undefined when it is gone. */
export async function processState(pid: number): Promise<{ state: string; pgrp: number } | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { state: fields[0] ?? '', pgrp: Number(fields[2]) }
  } catch {
    return undefined
  }
}

/** Waits for `promise`, but no longer than `ms`; the timer does not outlive the wait. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
