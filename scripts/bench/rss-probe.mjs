// Preloaded with --import into every dsh run of the benchmarks (see
// common.mjs): reports the process's peak resident set size (KiB) on fd 3
// when it exits.
import { writeSync } from 'node:fs'

process.on('exit', () => {
  try {
    writeSync(3, `${process.resourceUsage().maxRSS}\n`)
  } catch {
    // fd 3 is only open under the benchmark
  }
})
