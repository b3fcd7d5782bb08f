#!/usr/bin/env node
// Summarizes a V8 CPU profile (`node --cpu-prof`, or `pnpm bench --cpu-prof <dir>`):
// where the time of one dsh run went.
// Usage: node scripts/bench/cpu-profile.mjs <file.cpuprofile> [--top N] [--from <ms>] [--until <ms>]
//   --from, --until <ms>  only count the samples in this window, in ms from the
//                         start of the profile (e.g. --until 500 for the start-up)
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

const { values, positionals } = parseArgs({
  options: { top: { type: 'string' }, from: { type: 'string' }, until: { type: 'string' } },
  allowPositionals: true,
})
if (positionals.length !== 1) {
  console.error('usage: node scripts/bench/cpu-profile.mjs <file.cpuprofile> [--top N] [--from <ms>] [--until <ms>]')
  process.exit(1)
}
const top = Number(values.top ?? 15)
const from = Number(values.from ?? 0) * 1000
const until = values.until === undefined ? Infinity : Number(values.until) * 1000
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'))

const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map()
for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id)

/** `dep:name@version` for installed packages, the workspace folder for ours, `node:*` for Node's own code. */
function owner(url) {
  if (!url) return undefined
  const pnpm = url.match(/node_modules\/\.pnpm\/(@[^/]+\+[^/]+|[^/]+?)@([^/_]+)/)
  if (pnpm) return `dep ${pnpm[1].replace('+', '/')}@${pnpm[2]}`
  const ours = url.match(/\/((?:packages\/[^/]+|apps)\/[^/]+)\//)
  if (ours) return ours[1]
  if (url.startsWith('node:')) return 'node internals'
  return url
}
const frameName = (cf) =>
  `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^.*node_modules\/\.pnpm\//, '').replace(/^file:\/\/\/.*?\/(packages|apps)\//, '$1/')}:${cf.lineNumber + 1}`
const isModuleMachinery = (cf) => /^node:internal\/modules\//.test(cf.url)

let sampled = 0
const byActivity = new Map()
const byOwner = new Map()
const selfByFunction = new Map()
const moduleEval = new Map() // module top level (incl. its synchronous requires) -> inclusive time
const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us)

let t = 0
for (let i = 0; i < profile.samples.length; i++) {
  const us = profile.timeDeltas[i] ?? 0
  t += us
  if (t > until) break
  if (t < from) continue
  sampled += us
  const leafId = profile.samples[i]
  const leaf = nodes.get(leafId).callFrame
  const stack = []
  for (let id = leafId; id !== undefined; id = parent.get(id)) stack.push(nodes.get(id).callFrame)
  if (['(idle)', '(garbage collector)', '(program)'].includes(leaf.functionName)) {
    add(byActivity, leaf.functionName, us)
    continue
  }
  // Loading modules: resolving, reading, compiling, or running a module's top level.
  const loading = stack.some(isModuleMachinery)
  add(byActivity, loading ? 'loading modules (resolve, read, compile, run top level)' : 'running code', us)
  // Owner: the innermost frame that belongs to a package (native frames count for their caller).
  const owned =
    stack.find((cf) => owner(cf.url) && owner(cf.url) !== 'node internals') ?? stack.find((cf) => owner(cf.url))
  add(byOwner, owned ? owner(owned.url) : leaf.functionName || '(native)', us)
  add(selfByFunction, leaf.url ? frameName(leaf) : `${leaf.functionName || '(native)'} (native)`, us)
  const seen = new Set()
  for (const cf of stack) {
    if (cf.lineNumber === 0 && cf.columnNumber === 0 && cf.url && !cf.url.startsWith('node:') && !seen.has(cf.url)) {
      seen.add(cf.url)
      add(
        moduleEval,
        cf.url.replace(/^.*node_modules\/\.pnpm\//, '').replace(/^file:\/\/\/.*?\/(packages|apps)\//, '$1/'),
        us,
      )
    }
  }
}

const fmt = (us) => `${(us / 1000).toFixed(1).padStart(8)} ms`
const section = (title, map, limit = top) => {
  console.log(title)
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, limit)) console.log(`${fmt(us)}  ${key}`)
  console.log('')
}

const window =
  from > 0 || until < Infinity ? ` (from ${from / 1000} to ${until < Infinity ? until / 1000 : 'the end'} ms)` : ''
console.log(
  `${positionals[0]}: ${(sampled / 1000).toFixed(1)} ms sampled${window}, ${((profile.endTime - profile.startTime) / 1000).toFixed(1)} ms profiled\n`,
)
section('by activity', byActivity)
section('by owner (self time, native frames counted for the package that called them)', byOwner)
section('module top levels, inclusive (evaluating the module and what it requires synchronously)', moduleEval)
section('functions by self time', selfByFunction)
