#!/usr/bin/env node
// The README's first command (`npm run quickstart`): on a machine with only
// Node and npm, install pnpm and the Debian packages the sandbox and the tests
// need (system-packages.mjs) if missing, install dependencies, build, and
// start the main job, `dsh web` (Ctrl+C stops it).
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { ensureSystemPackages } from './system-packages.mjs'

const root = new URL('..', import.meta.url)
const { packageManager } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))
const pnpmVersion = packageManager.replace(/^pnpm@/, '')

function run(command, args) {
  console.error(`> ${command} ${args.join(' ')}`)
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' })
  if (result.error) throw result.error
  if (result.status !== 0) process.exit(result.status ?? 1)
}

let installed = ''
try {
  installed = execFileSync('pnpm', ['--version'], { encoding: 'utf8' }).trim()
} catch {
  installed = ''
}
if (installed.split('.')[0] !== pnpmVersion.split('.')[0]) run('npm', ['install', '--global', `pnpm@${pnpmVersion}`])

ensureSystemPackages()
run('pnpm', ['install', '--frozen-lockfile'])
run('pnpm', ['build'])
// Extra arguments reach dsh web: npm run quickstart -- --port 0 --no-open
run('apps/cli/lib/dsh', ['web', ...process.argv.slice(2)])
