import { readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDsh, tempDir } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

const journal = fileURLToPath(new URL('./fixtures/journal.mjs', import.meta.url))

let home: string
let cleanup: () => Promise<void>
beforeEach(async () => {
  ;({ dir: home, dispose: cleanup } = await tempDir())
})
afterEach(() => cleanup())

const rows = (log: string, aLabel: string) =>
  `- insert:\n    - { id: a, name: ${journal}, config: { file: ${log}, label: ${aLabel} } }\n    - { id: b, name: ${journal}, config: { file: ${log}, label: b } }\n`

describe('live reload of a custom profile', () => {
  it('restarts exactly the changed row, and keeps the running tree on a bad edit', async () => {
    const log = path.join(home, 'journal.log')
    const dir = path.join(home, 'profiles', 'mine')
    await mkdir(dir, { recursive: true })
    await writeFile(
      path.join(dir, 'package.json'),
      JSON.stringify({ dsh: { profile: { bundles: ['@dsh/bundle-base'] } } }),
    )
    const patch = path.join(dir, 'cordis.patch.yml')
    await writeFile(patch, rows(log, 'a1'))

    const running = startDsh(['mine'], { home, env: { DSH_LOG_LEVEL: 'info' } })
    await running.waitFor(/profile mine started/)
    expect(readFileSync(log, 'utf8')).toBe('start a1\nstart b\n')

    await writeFile(patch, rows(log, 'a2'))
    await running.waitFor(/reloaded .*cordis\.patch\.yml/)
    expect(readFileSync(log, 'utf8')).toBe('start a1\nstart b\nstop a1\nstart a2\n')

    let from = running.mark()
    await writeFile(patch, '- id: a\n  config: [unclosed\n')
    await running.waitFor(
      /reload failed, keeping the running tree: .*cordis\.patch\.yml: malformed YAML: .* at line 3, column 1\n/,
      { from },
    )
    from = running.mark()
    await writeFile(patch, rows(log, 'a2'))
    await running.waitFor(/reloaded /, { from })
    from = running.mark()
    await writeFile(path.join(home, 'cordis.patch.yml'), '- id: nobody\n  disabled: true\n')
    await running.waitFor(
      /reload failed, keeping the running tree: .*cordis\.patch\.yml: entry 1: no row with id "nobody"/,
      { from },
    )
    expect(readFileSync(log, 'utf8')).toBe('start a1\nstart b\nstop a1\nstart a2\n')

    const result = await running.kill('SIGTERM')
    expect(result.code).toBe(0)
    expect(readFileSync(log, 'utf8').split('\n').slice(4).sort()).toEqual(['', 'stop a2', 'stop b'])
  })

  it('headless applies its layers once: hmr is disabled there', async () => {
    const running = startDsh(['headless', '--dump-config'], { home })
    const result = await running.exited
    expect(result.stdout).toMatch(/- id: hmr\n {2}name: "@dsh\/hmr"\n {2}disabled: true/)
  })
})
