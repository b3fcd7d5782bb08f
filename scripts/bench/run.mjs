#!/usr/bin/env node
// `pnpm bench`: runs every benchmark and prints one table each, with the
// target next to each figure. Benchmarks print figures; they never fail on a
// target (only on a run that breaks). See README.md in this folder.
import { existsSync, mkdirSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { launcher, printTable, profileChildren, usePlainEntry } from './common.mjs'
import * as bashCall from './bash-call.mjs'
import * as catalog from './catalog.mjs'
import * as checkpoint from './checkpoint.mjs'
import * as dumpConfig from './dump-config.mjs'
import * as firstRequest from './first-request.mjs'
import * as grep from './grep.mjs'
import * as installed from './installed.mjs'
import { eventRate as sdkEvents, roundTrip as sdkRoundTrip } from './sdk.mjs'
import * as sessionOpen from './session-open.mjs'
import * as step from './step.mjs'
import * as twoStep from './two-step.mjs'
import * as web from './web.mjs'

/** Every benchmark: its name (for --only), what it measures, how many runs it takes by default, and its run. */
const BENCHMARKS = [
  {
    name: 'dump-config',
    title: 'cold start of dsh --profile headless --dump-config',
    defaultRuns: 15,
    run: dumpConfig.run,
  },
  {
    name: 'first-request',
    title: 'cold start to the first model request: dsh --profile headless "task"',
    defaultRuns: 10,
    run: firstRequest.run,
  },
  { name: 'step', title: 'harness time per step: reply end to next request, read tool', defaultRuns: 3, run: step.run },
  {
    name: 'two-step',
    title: 'two-step headless task (read, then answer): wall time and peak memory',
    defaultRuns: 10,
    run: twoStep.run,
  },
  {
    name: 'session-open',
    title: 'open a 10,000-event session: provider open() in-process, and a cold --resume',
    defaultRuns: 10,
    run: sessionOpen.run,
  },
  {
    name: 'grep',
    title: 'grep over a 50,000-file tree: the grep tool against plain rg',
    defaultRuns: 5,
    run: grep.run,
  },
  {
    name: 'bash-call',
    title: 'bash call overhead: the bash tool against spawning bash -c directly',
    defaultRuns: 30,
    run: bashCall.run,
  },
  /** Each run searches every query of the set once. */
  {
    name: 'catalog',
    title: 'session catalog over 10,000 sessions: build from the logs, search, list, live indexing',
    defaultRuns: 5,
    run: catalog.run,
  },
  {
    name: 'checkpoint',
    title: 'checkpoint snapshot of a 10,000-file workspace, little changed',
    defaultRuns: 10,
    run: checkpoint.run,
  },
  sdkRoundTrip,
  sdkEvents,
  {
    name: 'web',
    title: 'browser app: first paint of a 1,000-message session, streaming at 100 tokens/s, page memory',
    defaultRuns: 5,
    run: web.run,
  },
  {
    name: 'installed',
    title: 'the installed @dsh/cli tarball: size and cold start of --dump-config against the checkout',
    defaultRuns: 15,
    run: installed.run,
  },
]
const NAMES = BENCHMARKS.map((b) => b.name)

const usage = `usage: pnpm bench [--runs N] [--only <name>]... [--cpu-prof <dir>] [--plain]

  --runs N          runs per benchmark instead of each one's default
  --only <name>     run only this benchmark (repeat it, or separate names with commas)
  --cpu-prof <dir>  write a V8 CPU profile of every dsh run into <dir>
                    (summarize one with: node scripts/bench/cpu-profile.mjs <file>)
  --plain           run dsh as node apps/cli/lib/bin.js, without the startup
                    snapshot (to compare with the default, the launcher)

benchmarks: ${BENCHMARKS.map((b) => `${b.name} (${b.defaultRuns} runs)`).join(', ')}`

function fail(message) {
  console.error(`bench: ${message}\n\n${usage}`)
  process.exit(1)
}

let options
try {
  options = parseArgs({
    options: {
      runs: { type: 'string' },
      only: { type: 'string', multiple: true },
      'cpu-prof': { type: 'string' },
      plain: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  }).values
} catch (error) {
  fail(error.message)
}
if (options.help) {
  console.log(usage)
  process.exit(0)
}
const runs = options.runs === undefined ? undefined : Number(options.runs)
if (runs !== undefined && (!Number.isInteger(runs) || runs < 1)) fail('--runs needs a positive whole number')
const only = (options.only ?? [])
  .flatMap((value) => value.split(','))
  .map((value) => value.trim())
  .filter(Boolean)
for (const name of only) if (!NAMES.includes(name)) fail(`unknown benchmark "${name}"`)
if (!existsSync(launcher)) fail(`${path.relative(process.cwd(), launcher)} is missing: run \`pnpm build\` first`)
if (options.plain) usePlainEntry()
if (options['cpu-prof']) {
  const dir = path.resolve(options['cpu-prof'])
  mkdirSync(dir, { recursive: true })
  profileChildren(dir)
}

const selected = BENCHMARKS.filter((b) => only.length === 0 || only.includes(b.name))
const cpus = os.cpus()
console.log(
  `dsh benchmarks: node ${process.version}, ${os.platform()} ${os.arch()}, ${cpus.length} CPU(s) (${cpus[0]?.model.trim() ?? 'unknown'})`,
)
if (options['cpu-prof'])
  console.log(
    `CPU profiles of every dsh run go to ${path.resolve(options['cpu-prof'])} (profiling slows the runs down)`,
  )
if (options.plain) console.log('dsh runs take the plain entry, node apps/cli/lib/bin.js (no startup snapshot)')
console.log('')

const started = performance.now()
let met = 0
let targets = 0
const broken = []
for (const benchmark of selected) {
  const count = runs ?? benchmark.defaultRuns
  const title = `${benchmark.name}: ${benchmark.title} (${count} run${count === 1 ? '' : 's'})`
  const t0 = performance.now()
  try {
    const { rows, note } = await benchmark.run({ runs: count, name: benchmark.name })
    for (const r of rows) {
      if (r.target === undefined) continue
      targets++
      if (r.met) met++
    }
    printTable(title, rows, [note, `took ${((performance.now() - t0) / 1000).toFixed(1)} s`].filter(Boolean).join('; '))
  } catch (error) {
    broken.push(benchmark.name)
    console.log(title)
    console.log(`  FAILED: ${error instanceof Error ? error.message : String(error)}`.replaceAll('\n', '\n  '))
    console.log('')
  }
}
const total = ((performance.now() - started) / 1000).toFixed(1)
console.log(
  `targets met: ${met} of ${targets}; ${selected.length - broken.length} of ${selected.length} benchmark(s) ran; ${total} s in all`,
)
if (broken.length) {
  console.log(`benchmarks that could not run: ${broken.join(', ')}`)
  process.exitCode = 1
}
