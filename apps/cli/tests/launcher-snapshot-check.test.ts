import { spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { repoRoot, tempDir } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

// The `dsh` launcher (apps/cli/lib/dsh, written by scripts/snapshot/build.mjs)
// starts node from the snapshot only when the node on PATH is the binary that
// built it and unchanged since: its modification time equals the stamp file's.
// Here a copy of the launcher runs in a temporary installation whose bin.js
// says how it was started.
const lib = path.join(repoRoot, 'apps/cli/lib')

let install: { dir: string; dispose: () => Promise<void> }
let stamp: string

beforeEach(async () => {
  install = await tempDir()
  const dir = path.join(install.dir, 'lib')
  mkdirSync(path.join(dir, 'snapshot'), { recursive: true })
  copyFileSync(path.join(lib, 'dsh'), path.join(dir, 'dsh'))
  chmodSync(path.join(dir, 'dsh'), 0o755)
  symlinkSync(path.join(lib, 'snapshot/dsh.blob'), path.join(dir, 'snapshot/dsh.blob'))
  copyFileSync(path.join(lib, 'snapshot/import.cjs'), path.join(dir, 'snapshot/import.cjs'))
  stamp = path.join(dir, 'snapshot/node.stamp')
  copyFileSync(path.join(lib, 'snapshot/node.stamp'), stamp)
  // copyFileSync keeps no times: take them from the built stamp again
  const built = spawnSync('touch', ['-r', path.join(lib, 'snapshot/node.stamp'), stamp])
  expect(built.status).toBe(0)
  writeFileSync(
    path.join(dir, 'bin.js'),
    `console.log(process.execArgv.includes('--snapshot-blob') ? 'snapshot' : 'plain')\n`,
  )
})

afterEach(async () => {
  await install.dispose()
})

function launch(env: Record<string, string> = {}): string {
  const result = spawnSync(path.join(install.dir, 'lib/dsh'), ['--profile', 'headless', 'task'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
  })
  expect(result.stderr).toBe('')
  expect(result.status).toBe(0)
  return result.stdout.trim()
}

describe('the dsh launcher', () => {
  it('starts from the snapshot with the node that built it', () => {
    expect(launch()).toBe('snapshot')
  })

  it('takes the plain entry when the node binary changed since the build (its time differs from the stamp)', () => {
    utimesSync(stamp, new Date('2020-01-01T00:00:00Z'), new Date('2020-01-01T00:00:00Z'))
    expect(launch()).toBe('plain')
  })

  it('takes the plain entry when the stamp is missing', () => {
    rmSync(stamp)
    expect(launch()).toBe('plain')
  })

  it('takes the plain entry with another node first on PATH', () => {
    const bin = path.join(install.dir, 'other-node')
    mkdirSync(bin)
    writeFileSync(path.join(bin, 'node'), `#!/bin/sh\necho other node\n`, { mode: 0o755 })
    expect(launch({ PATH: `${bin}:${process.env.PATH ?? ''}` })).toBe('other node')
  })

  describe('GLIBC_TUNABLES for node', () => {
    /** What a stand-in node first on PATH gets: GLIBC_TUNABLES, and the user's value the launcher keeps for dsh. */
    function tunablesFor(env: Record<string, string>): string {
      const bin = path.join(install.dir, 'env-node')
      mkdirSync(bin)
      writeFileSync(
        path.join(bin, 'node'),
        `#!/bin/sh\necho "[\${GLIBC_TUNABLES-(unset)}] [\${DSH_LAUNCHER_GLIBC_TUNABLES-(unset)}]"\n`,
        { mode: 0o755 },
      )
      return launch({ PATH: `${bin}:${process.env.PATH ?? ''}`, ...env })
    }

    it('asks malloc for huge pages and two arenas, and keeps that the variable was unset', () => {
      expect(tunablesFor({})).toBe('[glibc.malloc.hugetlb=1:glibc.malloc.arena_max=2] []')
    })

    it('adds to the tunables the user set, and keeps their value', () => {
      expect(tunablesFor({ GLIBC_TUNABLES: 'glibc.malloc.check=0' })).toBe(
        '[glibc.malloc.check=0:glibc.malloc.hugetlb=1:glibc.malloc.arena_max=2] [=glibc.malloc.check=0]',
      )
    })

    it('keeps a set but empty value apart from an unset one', () => {
      expect(tunablesFor({ GLIBC_TUNABLES: '' })).toBe('[glibc.malloc.hugetlb=1:glibc.malloc.arena_max=2] [=]')
    })

    it('leaves a hugetlb setting of the user alone, adding the arena limit', () => {
      expect(tunablesFor({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' })).toBe(
        '[glibc.malloc.hugetlb=0:glibc.malloc.arena_max=2] [=glibc.malloc.hugetlb=0]',
      )
    })

    it('leaves an arena_max setting of the user alone, adding huge pages', () => {
      expect(tunablesFor({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=8' })).toBe(
        '[glibc.malloc.arena_max=8:glibc.malloc.hugetlb=1] [=glibc.malloc.arena_max=8]',
      )
    })

    it('adds nothing when the user set both', () => {
      expect(tunablesFor({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=8:glibc.malloc.hugetlb=0' })).toBe(
        '[glibc.malloc.arena_max=8:glibc.malloc.hugetlb=0] [(unset)]',
      )
    })
  })
})
