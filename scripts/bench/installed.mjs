// The release as users install it: `pnpm release:pack`'s CLI tarball installed
// with `npm install --global` into a temporary prefix (or the one named by
// DSH_BENCH_PREFIX, to skip the minutes of packing and installing), its size
// on disk, and its cold start of `dsh --profile headless --dump-config` next
// to the checkout's, runs interleaved.
import { execFileSync } from 'node:child_process'
import { lstatSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { launcher, median, ms, root, row, runDsh, sandbox, tempDir } from './common.mjs'

/** The installed cold start may be at most this much slower than the checkout's. */
const MAX_SLOWDOWN = 1.1

/** Bytes of the files under `dir` (symbolic links not followed). */
function sizeOf(dir) {
  let total = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) total += sizeOf(file)
    else total += lstatSync(file).size
  }
  return total
}

async function installed() {
  if (process.env.DSH_BENCH_PREFIX) return { prefix: process.env.DSH_BENCH_PREFIX, tarball: undefined, dispose() {} }
  const tmp = await tempDir('installed')
  const out = execFileSync(process.execPath, [path.join(root, 'scripts/release/pack.mjs')], { encoding: 'utf8' })
  const tarball = out
    .trim()
    .split('\n')
    .find((file) => path.basename(file).startsWith('dsh-cli-'))
  execFileSync('npm', ['install', '--global', '--prefix', tmp.dir, '--no-audit', '--no-fund', tarball], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, npm_config_build_from_source: 'true' },
  })
  return { prefix: tmp.dir, tarball, dispose: tmp.dispose }
}

export async function run({ runs, name }) {
  const install = await installed()
  const box = await sandbox(name)
  try {
    const program = path.join(install.prefix, 'bin/dsh')
    const packageDir = path.join(install.prefix, 'lib/node_modules/@dsh/cli')
    const args = ['--profile', 'headless', '--dump-config']
    const options = { home: box.home, cwd: box.workspace }
    await runDsh(args, options) // creates the profile; not counted
    await runDsh(args, { ...options, program })
    const checkout = []
    const fromInstall = []
    for (let i = 0; i < runs; i++) {
      checkout.push((await runDsh(args, options)).wallMs)
      fromInstall.push((await runDsh(args, { ...options, program })).wallMs)
    }
    const ratio = median(fromInstall) / median(checkout)
    const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`
    return {
      rows: [
        row('installed size (the package and its node_modules)', mib(sizeOf(packageDir))),
        ...(install.tarball ? [row('tarball size', mib(lstatSync(install.tarball).size))] : []),
        row('cold start, checkout (lib/dsh), median', ms(median(checkout))),
        row('cold start, installed (bin/dsh), median', ms(median(fromInstall))),
        row('installed / checkout', `${ratio.toFixed(3)}`, `<= ${MAX_SLOWDOWN.toFixed(2)}`, ratio <= MAX_SLOWDOWN),
      ],
      note: `checkout ${path.relative(process.cwd(), launcher) || launcher}, installed ${program}`,
    }
  } finally {
    await box.dispose()
    await install.dispose()
  }
}
