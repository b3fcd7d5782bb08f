#!/usr/bin/env node
// Cold start of `dsh --profile headless --dump-config`: median wall time and
// peak memory over several runs, each a fresh node process.
// Usage: pnpm bench [--runs N]
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))
const bin = path.join(root, 'apps/cli/lib/bin.js')
const probe = path.join(root, 'scripts/bench/rss-probe.mjs')
const runsArg = process.argv.indexOf('--runs')
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 15
if (!Number.isInteger(runs) || runs < 1) {
  console.error('bench: --runs needs a positive whole number')
  process.exit(1)
}

const home = mkdtempSync(path.join(os.tmpdir(), 'dsh-bench-'))

function once() {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const child = spawn(process.execPath, ['--import', probe, bin, '--profile', 'headless', '--dump-config'], {
      env: { ...process.env, DSH_HOME: home },
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    })
    let rss = ''
    let stderr = ''
    child.stdio[3].on('data', (chunk) => (rss += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      if (code !== 0) reject(new Error(`dsh exited ${code}: ${stderr}`))
      else resolve({ ms, rssMiB: Number(rss.trim()) / 1024 })
    })
  })
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

try {
  await once() // creates the profile; not counted
  const samples = []
  for (let i = 0; i < runs; i++) samples.push(await once())
  const wall = median(samples.map((s) => s.ms))
  const rss = median(samples.map((s) => s.rssMiB))
  const peak = Math.max(...samples.map((s) => s.rssMiB))
  console.log(`cold start: dsh --profile headless --dump-config (${runs} runs, node ${process.version})`)
  console.log(`  wall time   median ${wall.toFixed(1)} ms   (min ${Math.min(...samples.map((s) => s.ms)).toFixed(1)}, max ${Math.max(...samples.map((s) => s.ms)).toFixed(1)})`)
  console.log(`  peak RSS    median ${rss.toFixed(1)} MiB   (max ${peak.toFixed(1)})`)
  console.log(`  target      < 250 ms and < 80 MiB: ${wall < 250 && peak < 80 ? 'met' : 'NOT met'}`)
} finally {
  rmSync(home, { recursive: true, force: true })
}
