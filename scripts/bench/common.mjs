// Shared helpers of the benchmarks: paths, statistics, temp folders, spawning
// the built `dsh` bin, a mock LLM that timestamps requests and responses, and
// the table every benchmark prints.
import { spawn } from 'node:child_process'
import dc from 'node:diagnostics_channel'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

export const root = fileURLToPath(new URL('../..', import.meta.url))
/** The `dsh` command users run: the launcher, which starts node from the startup snapshot when it fits. */
export const launcher = path.join(root, 'apps/cli/lib/dsh')
/** The plain entry (`node bin.js`), and the snapshot the launcher starts from instead when it fits. */
export const bin = path.join(root, 'apps/cli/lib/bin.js')
const builtBlob = path.join(root, 'apps/cli/lib/snapshot/dsh.blob')
/**
 * `DSH_BENCH_BLOB=<file>` runs every dsh child from that snapshot (a copy of
 * an earlier build's `dsh.blob`) with `node --snapshot-blob`, not through the
 * launcher: set it to each of two copies in turn to compare two builds.
 */
const chosenBlob = process.env.DSH_BENCH_BLOB || undefined
const snapshotBlob = chosenBlob ?? builtBlob
const probe = path.join(root, 'scripts/bench/probe.cjs')

/**
 * Imports a workspace package through its built `lib/` (scripts/ has no
 * node_modules of its own, so `@dsh/...` names do not resolve from here).
 */
export function importLib(relativeFile) {
  const file = path.join(root, relativeFile)
  if (!existsSync(file)) throw new Error(`${relativeFile} is missing: run \`pnpm build\` first`)
  return import(pathToFileURL(file).href)
}

/** A dsh run that takes longer than this is killed and the benchmark fails. */
const RUN_LIMIT_MS = 60_000

export function median(values) {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Nearest-rank percentile, `p` in 0..100. */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
}

export const ms = (value) => `${value.toFixed(1)} ms`
export const mib = (kib) => `${(kib / 1024).toFixed(1)} MiB`
export const range = (values, format = (v) => v.toFixed(1)) =>
  `${format(Math.min(...values))} / ${format(Math.max(...values))}`

/** A 0700 temp folder; `dispose()` removes it. */
export async function tempDir(label) {
  const dir = await mkdtemp(path.join(os.tmpdir(), `dsh-bench-${label}-`))
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) }
}

/** A temp `DSH_HOME` and a temp workspace holding `notes.txt`, a small text file for `read`. */
export async function sandbox(label) {
  const home = await tempDir(`${label}-home`)
  const workspace = await tempDir(`${label}-ws`)
  const lines = Array.from({ length: 12 }, (_, i) => `line ${i + 1}: the quick brown fox jumps over the lazy dog`)
  await writeFile(path.join(workspace.dir, 'notes.txt'), `${lines.join('\n')}\n`)
  return {
    home: home.dir,
    workspace: workspace.dir,
    dispose: () => Promise.all([home.dispose(), workspace.dispose()]),
  }
}

/** The parent's environment without the developer's dsh, DeepSeek and NODE_OPTIONS settings, plus `extra`. */
export function childEnv(extra) {
  const env = { ...process.env }
  for (const key of Object.keys(env)) if (key.startsWith('DSH_') || key.startsWith('DEEPSEEK_')) delete env[key]
  delete env.NODE_OPTIONS
  return { ...env, ...extra }
}

/** Extra node flags for every dsh child (set by the runner's `--cpu-prof <dir>`). */
const nodeFlags = []
export function profileChildren(dir) {
  nodeFlags.push('--cpu-prof', '--cpu-prof-dir', dir)
}

/** Whether runs take the plain entry instead of the launcher (the runner's `--plain`, for comparisons). */
let plain = false
export function usePlainEntry() {
  plain = true
}

/**
 * How dsh starts: `[file, argv, env]`, where `env` is what to add to the
 * child's environment. Normally the launcher, as users run it. Node flags
 * such as --cpu-prof cannot go through the launcher or NODE_OPTIONS, so a
 * profiled run (and one from `DSH_BENCH_BLOB`) starts node itself the way the
 * launcher would: from the snapshot when it is built, else the plain entry,
 * with the malloc tunable the launcher sets. With `usePlainEntry()` every
 * run takes the plain entry.
 */
export function dshCommand(args) {
  if (chosenBlob && !existsSync(chosenBlob)) throw new Error(`DSH_BENCH_BLOB: no file ${chosenBlob}`)
  if (nodeFlags.length === 0 && !plain && !chosenBlob) return [launcher, args, {}]
  const entry = existsSync(snapshotBlob) && !plain ? ['--snapshot-blob', snapshotBlob, bin] : [bin]
  return [
    process.execPath,
    [...nodeFlags, ...entry, ...args],
    { GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1:glibc.malloc.arena_max=2' },
  ]
}

/**
 * Runs the built `dsh` once (see `command`), or `program` (another dsh, e.g. an installed one). Session titles are off: their
 * model call runs beside the task and would add a request to every figure.
 * Resolves with `{ code, stdout, stderr, startedAt, endedAt, wallMs, maxRssKiB, marks }`;
 * `marks` holds the probe's times in the dsh process (see probe.cjs);
 * `startedAt` is `performance.now()` just before the spawn, `endedAt` when the
 * child has exited and closed its output. Rejects when it exits non-zero
 * (unless `allowFailure`) or runs past the limit.
 */
export function runDsh(args, { home, cwd = root, env = {}, allowFailure = false, program } = {}) {
  return new Promise((resolve, reject) => {
    const [file, argv, launcherEnv] = program ? [program, args, {}] : dshCommand(args)
    const startedAt = performance.now()
    const child = spawn(file, argv, {
      cwd,
      env: childEnv({
        DSH_HOME: home,
        DSH_SESSION_TITLES: 'off',
        NODE_OPTIONS: `--require="${probe}"`,
        ...launcherEnv,
        ...env,
      }),
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    let report = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.stdio[3].on('data', (chunk) => (report += chunk))
    const limit = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS)
    child.on('error', (error) => {
      clearTimeout(limit)
      reject(error)
    })
    child.on('close', (code, signal) => {
      clearTimeout(limit)
      const endedAt = performance.now()
      const { maxRssKiB = Number.NaN, ...marks } = report.trim() ? JSON.parse(report) : {}
      const result = { code, stdout, stderr, startedAt, endedAt, wallMs: endedAt - startedAt, maxRssKiB, marks }
      if (code === 0 || allowFailure) return resolve(result)
      const why = signal === 'SIGKILL' ? `was killed after ${RUN_LIMIT_MS / 1000} s` : `exited ${code ?? signal}`
      reject(new Error(`dsh ${args.map((a) => JSON.stringify(a)).join(' ')} ${why}\n${stderr.trim() || stdout.trim()}`))
    })
  })
}

// Every HTTP server in this process is a mock LLM. Node's built-in HTTP
// diagnostics channels tell when a request's headers arrive and when a
// response has been fully handed to the socket, without touching the mock.
const listeners = new Map() // port -> (mark) => void
const mark = (kind) => (message) => {
  const t = performance.now()
  listeners.get(message.socket?.localPort)?.({ kind, t })
}
// Held in module constants so the channels are never collected.
const requestStart = dc.channel('http.server.request.start')
const responseFinish = dc.channel('http.server.response.finish')
requestStart.subscribe(mark('request'))
responseFinish.subscribe(mark('response'))

/**
 * Starts `@dsh/llm-mock` with `script` as its fallback (it answers every
 * request). `timeline` collects `{ kind: 'request' | 'response', t }` in order:
 * `request` when a request's headers arrive, `response` when the mock has
 * written the end of its reply. Clear it with `timeline.length = 0`.
 */
export async function startTimedMock(script) {
  const { startMockLlm } = await importLib('packages/test-support/llm-mock/lib/index.js')
  const mock = await startMockLlm({ fallback: script })
  const timeline = []
  listeners.set(mock.port, (entry) => timeline.push(entry))
  return {
    mock,
    timeline,
    env: { DEEPSEEK_BASE_URL: mock.url, DEEPSEEK_API_KEY: 'sk-bench' },
    async close() {
      listeners.delete(mock.port)
      await mock.close()
    },
  }
}

/**
 * The set-up of a headless task benchmark: the timed mock answering with
 * `script` and a sandbox named `label`. `body` gets `{ server, box, task }`,
 * where `task(prompt)` clears the mock's timeline and runs
 * `dsh --profile headless <prompt>` in the sandbox. Both are removed after.
 */
export async function withHeadlessTask(label, script, body) {
  const server = await startTimedMock(script)
  const box = await sandbox(label)
  const task = (prompt) => {
    server.timeline.length = 0
    return runDsh(['--profile', 'headless', prompt], { home: box.home, cwd: box.workspace, env: server.env })
  }
  try {
    return await body({ server, box, task })
  } finally {
    await server.close()
    await box.dispose()
  }
}

/** The results of `runs` calls of `once`, after a first call that is not counted (it creates the profile). */
export async function afterWarmUp(runs, once) {
  await once()
  const samples = []
  for (let i = 0; i < runs; i++) samples.push(await once())
  return samples
}

/** The reply builders of `@dsh/llm-mock`, tuned to answer at once (one delta, no keep-alive lines, no usage chunk). */
export async function instantReplies() {
  const { reply } = await importLib('packages/test-support/llm-mock/lib/index.js')
  const fast = { keepAlive: false, usage: null, chunkSize: 10_000, argumentFragments: 1 }
  return {
    text: (content) => reply.text(content, fast),
    toolCalls: (calls) => reply.toolCalls(calls, fast),
  }
}

/** Whether a recorded request carries tool results (i.e. it follows a tool step). */
export const toolResults = (request) => (request.body?.messages ?? []).filter((m) => m.role === 'tool').length

/**
 * A figure row: `{ figure, value, target?, met? }`. `met` is a boolean when
 * the row has a target; the verdict column prints `met` or `NOT met`.
 */
export function row(figure, value, target, met) {
  return target === undefined ? { figure, value } : { figure, value, target, met }
}

/** Rows for wall times in ms: the median against `targetMs`, then min / max. */
export function wallRows(walls, targetMs) {
  const value = median(walls)
  return [
    row('wall time, median', ms(value), `< ${targetMs} ms`, value < targetMs),
    row('wall time, min / max', `${range(walls)} ms`),
  ]
}

/** Rows for peak RSS figures in KiB: the max against `targetMiB`, then the median. */
export function rssRows(rssKiB, targetMiB) {
  const peak = Math.max(...rssKiB)
  return [
    row('peak RSS, max', mib(peak), `< ${targetMiB} MiB`, peak < targetMiB * 1024),
    row('peak RSS, median', mib(median(rssKiB))),
  ]
}

/** Prints a benchmark's table: a title line, then aligned figure / value / target / verdict columns. */
export function printTable(title, rows, note) {
  const cells = rows.map((r) => [
    r.figure,
    r.value,
    r.target ?? '',
    r.target === undefined ? '' : r.met ? 'met' : 'NOT met',
  ])
  const header = ['figure', 'value', 'target', '']
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)))
  const line = (c) => `  ${c.map((text, i) => text.padEnd(widths[i])).join('   ')}`.trimEnd()
  console.log(title)
  console.log(line(header))
  for (const c of cells) console.log(line(c))
  if (note) console.log(`  ${note}`)
  console.log('')
}
