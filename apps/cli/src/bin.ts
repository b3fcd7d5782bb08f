#!/usr/bin/env node
// The plain entry: Node loads every module from lib/ folders. `lib/dsh`, the
// checkout's launcher, starts from the startup snapshot instead and falls
// back to this file when the snapshot is missing or does not fit the node
// binary. In an installed package (no shell launcher) this file is the bin:
// it starts node from the cached snapshot when there is one that fits, and
// otherwise has one built for the next run (src/snapshot/cache.ts).
import { fileURLToPath } from 'node:url'
import manifest from '../package.json' with { type: 'json' }
import { chooseStart, runFromSnapshot, startBuild } from './snapshot/cache.ts'
import { reportStartup } from './snapshot/startup-report.ts'

const installDir = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
const choice = chooseStart({
  installDir,
  dshVersion: manifest.version,
  args,
  execArgv: process.execArgv,
  env: process.env,
})
if (choice.kind === 'snapshot') {
  runFromSnapshot(choice.blob, fileURLToPath(import.meta.url), args)
} else {
  if (choice.build) startBuild(choice.build.installDir, choice.build.dir, manifest.version)
  reportStartup(`plain entry (${choice.reason}${choice.build ? '; building a startup snapshot for the next run' : ''})`)
  const { start } = await import('./start.ts')
  await start({ installDir })
}
