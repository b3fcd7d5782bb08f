// grep over a large tree: the `grep` tool through the whole pipeline (validation,
// fs seam, the bundled ripgrep, result formatting) against running the same
// ripgrep binary directly with the same search.
import { spawn } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { importLib, median, ms, row, tempDir } from './common.mjs'
import { toolContext } from './tools.mjs'

const DIRS = 250
const FILES_PER_DIR = 200
const TARGET_RATIO = 1.2

async function makeTree(dir) {
  for (let d = 0; d < DIRS; d++) {
    const sub = path.join(dir, `pkg${d}`, 'src')
    await mkdir(sub, { recursive: true })
    await Promise.all(
      Array.from({ length: FILES_PER_DIR }, (_, f) => {
        const marker = (d * FILES_PER_DIR + f) % 1000 === 0 ? '// NEEDLE: find me\n' : ''
        return writeFile(
          path.join(sub, `file${f}.ts`),
          `export const value${f} = ${f}\n${marker}export function f${f}() { return value${f} * 2 }\n`,
        )
      }),
    )
  }
}

function rg(rgPath, args, cwd) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(rgPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0 ? resolve({ ms: performance.now() - started, out }) : reject(new Error(`rg exited ${code}`)),
    )
  })
}

export async function run({ runs }) {
  const { rgPath } = await importLib('packages/fs/tool-fs/node_modules/@vscode/ripgrep/lib/index.js')
  const box = await tempDir('grep')
  const tools = await toolContext()
  try {
    await makeTree(box.dir)
    const direct = []
    const viaTool = []
    let matches = 0
    // One warm-up of each (page cache), not counted.
    await rg(rgPath, ['--line-number', '--with-filename', 'NEEDLE', '.'], box.dir)
    await tools.call('grep', { pattern: 'NEEDLE', output_mode: 'content' }, box.dir)
    for (let i = 0; i < runs; i++) {
      const plain = await rg(rgPath, ['--line-number', '--with-filename', 'NEEDLE', '.'], box.dir)
      direct.push(plain.ms)
      matches = plain.out.trim().split('\n').length
      const started = performance.now()
      await tools.call('grep', { pattern: 'NEEDLE', output_mode: 'content' }, box.dir)
      viaTool.push(performance.now() - started)
    }
    const ratio = median(viaTool) / median(direct)
    return {
      rows: [
        row('plain rg, median', ms(median(direct))),
        row('grep tool, median', ms(median(viaTool))),
        row('grep tool / plain rg', `${ratio.toFixed(2)}x`, `< ${TARGET_RATIO}x`, ratio < TARGET_RATIO),
      ],
      note: `${DIRS * FILES_PER_DIR} files, ${matches} matching lines, ${runs} run(s) each`,
    }
  } finally {
    await tools.dispose()
    await box.dispose()
  }
}
