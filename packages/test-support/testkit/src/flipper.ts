import { type ChildProcess, spawn } from 'node:child_process'

/** The loop the flipper runs, in a plain node process: every step is a syscall, errors are ignored and the state heals itself. */
const FLIP_LOOP = `
const { lstatSync, renameSync, rmSync, symlinkSync, unlinkSync } = require('node:fs')
const [path, target] = process.argv.slice(1)
const parked = path + '.parked-folder'
const link = path + '.next-link'
const quiet = (step) => { try { step() } catch {} }
process.stdout.write('flipping\\n')
for (;;) {
  // The folder goes away (or, if something else made a folder there, that one is dropped).
  try { renameSync(path, parked) } catch { quiet(() => { if (lstatSync(path).isDirectory()) rmSync(path, { recursive: true, force: true }) }) }
  // A symlink to the target takes its place, atomically.
  quiet(() => symlinkSync(target, link))
  quiet(() => renameSync(link, path))
  // And the folder comes back.
  quiet(() => unlinkSync(path))
  quiet(() => renameSync(parked, path))
}
`

/** A background process flipping a path between a folder and a symlink; stop it before the test ends. */
export interface PathFlipper {
  /** The flipping process (outside dsh). */
  readonly child: ChildProcess
  /** Kills the process (by its pid) and waits for it to exit. */
  stop(): Promise<void>
}

/**
 * Starts a process, outside dsh, that flips `path` (an existing folder) back
 * and forth between that folder and a symlink to `target`, as fast as it can:
 * the attack on check-then-use file tools. Resolves once the loop runs.
 */
export async function startPathFlipper(path: string, target: string): Promise<PathFlipper> {
  const child = spawn(process.execPath, ['-e', FLIP_LOOP, path, target], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject)
    child.stdout?.once('data', () => resolve())
  })
  return {
    child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    },
  }
}
