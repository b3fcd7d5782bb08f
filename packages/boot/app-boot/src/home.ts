import { mkdir } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

/** The harness home: `$DSH_HOME` when set and not blank, else `~/.dsh`. */
export function resolveHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.DSH_HOME?.trim()
  return path.resolve(fromEnv ? fromEnv : path.join(os.homedir(), '.dsh'))
}

/** Creates a private folder (0700) and its missing parents. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
}
