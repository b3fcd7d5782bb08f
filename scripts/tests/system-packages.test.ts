// The quick start's system-packages step (also run by .ci/run), run as a
// script the way both run it: present packages are left alone, and where it
// cannot install (no apt-get, or neither root nor sudo) it stops and says
// what to run.
import { spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, mkdirSync, symlinkSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'

const script = fileURLToPath(new URL('../system-packages.mjs', import.meta.url))
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})

/** A folder anyone may enter holding a copy of the script, and a bin folder with only `node` and `extra` commands. */
async function sandboxWith(extra: string[]): Promise<{ script: string; bin: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'dsh-syspkg-'))
  cleanups.push(() => rm(dir, { recursive: true, force: true }))
  chmodSync(dir, 0o755)
  const copy = path.join(dir, 'system-packages.mjs')
  copyFileSync(script, copy)
  chmodSync(copy, 0o644)
  const bin = path.join(dir, 'bin')
  mkdirSync(bin, { mode: 0o755 })
  symlinkSync(process.execPath, path.join(bin, 'node'))
  for (const command of extra) symlinkSync(`/usr/bin/${command}`, path.join(bin, command))
  return { script: copy, bin }
}

describe('scripts/system-packages.mjs', () => {
  it('does nothing when bwrap, slirp4netns and chromium are installed', () => {
    const result = spawnSync(process.execPath, [script], { encoding: 'utf8' })
    expect(result.status).toBe(0)
    expect(result.stderr).toBe('')
  })

  it('without apt-get, names the missing packages and stops', async () => {
    const box = await sandboxWith([])
    const result = spawnSync(path.join(box.bin, 'node'), [box.script], {
      encoding: 'utf8',
      env: { PATH: box.bin },
    })
    expect(result.status).toBe(1)
    expect(result.stderr).toContain('missing bubblewrap, slirp4netns, chromium and apt-get is not on PATH')
  })

  it('as a user without sudo, stops with the exact command to run as root', async () => {
    const box = await sandboxWith(['apt-get', 'bwrap'])
    const result = spawnSync(
      '/usr/bin/setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', path.join(box.bin, 'node'), box.script],
      { encoding: 'utf8', env: { PATH: box.bin } },
    )
    expect(result.stderr).toContain(
      'missing slirp4netns, chromium; as root, run:\n' +
        '  apt-get update && env DEBIAN_FRONTEND=noninteractive apt-get install -y slirp4netns chromium',
    )
    expect(result.status).toBe(1)
  })
})
