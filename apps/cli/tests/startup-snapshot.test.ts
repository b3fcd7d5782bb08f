import { existsSync, readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { dshBin, repoRoot, runDsh, tempDir } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'

// The `dsh` command starts node from the startup snapshot built by `pnpm build`
// (scripts/snapshot/build.mjs) and falls back to the plain entry when the
// snapshot cannot be used. Either way a plugin sees one cordis.
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
const blob = path.join(repoRoot, 'apps/cli/lib/snapshot/dsh.blob')

interface Probe {
  fromSnapshot: boolean
  sameCordis: boolean
  preloaded: boolean
  tunables: string | null
  launcherVariables: string[]
}

/** Boots a custom profile whose only extra row is the probe, in a fresh home; resolves with what the probe saw. */
async function probe(env: Record<string, string | undefined> = {}): Promise<Probe> {
  const { dir: home, dispose } = await tempDir()
  try {
    const file = path.join(home, 'probe.json')
    const dir = path.join(home, 'profiles', 'probe')
    await mkdir(dir, { recursive: true })
    await writeFile(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'p-probe', private: true, dsh: { profile: { bundles: ['@dsh/bundle-base'] } } }),
    )
    await writeFile(
      path.join(dir, 'cordis.patch.yml'),
      `- insert:\n    - { id: probe, name: ${path.join(fixtures, 'snapshot-probe.mjs')}, config: { file: ${file} } }\n`,
    )
    const result = await runDsh(['probe'], { home, env })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    return JSON.parse(readFileSync(file, 'utf8')) as Probe
  } finally {
    await dispose()
  }
}

/** How dsh started, as the probe saw it (without what it saw of GLIBC_TUNABLES, checked below). */
const started = ({ fromSnapshot, sameCordis, preloaded }: Probe) => ({ fromSnapshot, sameCordis, preloaded })

describe('startup snapshot', () => {
  it('is built next to the plain entry', () => {
    expect(existsSync(blob)).toBe(true)
    expect(existsSync(dshBin)).toBe(true)
  })

  it('starts dsh, and a plugin that imports @dsh/cordis gets the running instance', async () => {
    expect(started(await probe())).toEqual({ fromSnapshot: true, sameCordis: true, preloaded: false })
  })

  it('runs NODE_OPTIONS preloads as plain node does', async () => {
    const preload = path.join(fixtures, 'snapshot-preload.mjs')
    expect(started(await probe({ NODE_OPTIONS: `--import=${preload}` }))).toEqual({
      fromSnapshot: true,
      sameCordis: true,
      preloaded: true,
    })
  })

  it('gives way to the plain entry when NODE_OPTIONS sets a V8 flag, which the snapshot cannot take', async () => {
    expect(started(await probe({ NODE_OPTIONS: '--max-old-space-size=512' }))).toEqual({
      fromSnapshot: false,
      sameCordis: true,
      preloaded: false,
    })
  })

  // The launcher adds glibc.malloc.hugetlb=1 and arena_max=2 for node (launcher-snapshot-check.test.ts); dsh puts
  // the user's value back.
  describe('GLIBC_TUNABLES', () => {
    const seen = (p: Probe) => ({ tunables: p.tunables, launcherVariables: p.launcherVariables })

    it('is unset again for dsh and the commands it runs when the user left it unset', async () => {
      expect(seen(await probe({ GLIBC_TUNABLES: undefined }))).toEqual({ tunables: null, launcherVariables: [] })
    })

    it("is the user's own value again", async () => {
      expect(seen(await probe({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }))).toEqual({
        tunables: 'glibc.malloc.arena_max=2',
        launcherVariables: [],
      })
    })

    it('is put back by the plain entry too (here: set and empty)', async () => {
      const p = await probe({ GLIBC_TUNABLES: '', NODE_OPTIONS: '--max-old-space-size=512' })
      expect(p.fromSnapshot).toBe(false)
      expect(seen(p)).toEqual({ tunables: '', launcherVariables: [] })
    })
  })
})
