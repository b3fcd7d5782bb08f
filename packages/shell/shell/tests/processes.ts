import { readFile } from 'node:fs/promises'
import { isLive, readProcessTable } from '@dsh/subprocess'

/**
 * Running (non-zombie) processes whose argv[0] is `marker`, seen from the
 * host. Sandboxed processes have other pids inside their namespace, so tests
 * tag them with `exec -a <marker>` and look them up here.
 */
export async function liveWithMarker(marker: string): Promise<number[]> {
  const found: number[] = []
  for (const entry of (await readProcessTable()).values()) {
    if (!isLive(entry)) continue
    const cmdline = await readFile(`/proc/${entry.pid}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.split('\0')[0] === marker) found.push(entry.pid)
  }
  return found
}
