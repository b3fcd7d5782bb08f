// A checkpoint snapshot of a 10,000-file workspace where little changed: the
// cost dsh adds before each turn that changes files (`@dsh/checkpoints`). The
// first snapshot (an empty shadow repository, every file hashed) is shown
// apart; each run then edits two files and adds one before the snapshot.
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { importLib, median, ms, range, row, tempDir } from './common.mjs'

const FILES = 10_000
const TARGET_MS = 200

export async function run({ runs, name }) {
  const { Context } = await importLib('packages/boot/cordis/lib/index.js')
  const { SessionStore } = await importLib('packages/core/session/lib/index.js')
  const subprocess = await importLib('packages/subprocess/subprocess/lib/index.js')
  const { Checkpoints } = await importLib('packages/session/checkpoints/lib/index.js')
  const box = await tempDir(name)
  const ctx = new Context()
  try {
    const workspace = path.join(box.dir, 'work')
    for (let d = 0; d < 100; d++) {
      const dir = path.join(workspace, 'src', `m${d}`)
      await mkdir(dir, { recursive: true })
      for (let f = 0; f < FILES / 100; f++)
        await writeFile(path.join(dir, `f${f}.ts`), `export const v${d}_${f} = ${d * f}\n// module ${d} file ${f}\n`)
    }
    await writeFile(path.join(workspace, '.gitignore'), 'node_modules/\n')
    await ctx.plugin(SessionStore)
    await ctx.plugin(subprocess, {})
    await ctx.plugin(Checkpoints, {
      root: path.join(box.dir, 'checkpoints'),
      maxFileBytes: 4 << 20,
      timeoutMs: 60_000,
      exclude: [],
    })
    await new Promise((resolve) => setTimeout(resolve, 0))
    const session = ctx.sessions.create({ cwd: workspace })
    let started = performance.now()
    await ctx.checkpoints.before(session, 0, 'first')
    const firstMs = performance.now() - started
    const walls = []
    for (let i = 1; i <= runs; i++) {
      await writeFile(path.join(workspace, 'src', 'm1', 'f1.ts'), `export const changed = ${i}\n`)
      await writeFile(path.join(workspace, 'src', 'm2', `new${i}.ts`), `export const added = ${i}\n`)
      started = performance.now()
      await ctx.checkpoints.before(session, i, `m${i}`)
      walls.push(performance.now() - started)
    }
    const value = median(walls)
    return {
      rows: [
        row('snapshot, median', ms(value), `< ${TARGET_MS} ms`, value < TARGET_MS),
        row('snapshot, min / max', `${range(walls)} ms`),
        row('first snapshot (empty shadow repository)', ms(firstMs)),
      ],
    }
  } finally {
    await box.dispose()
  }
}
