'use strict'
// Preloaded with --require into every dsh run of the benchmarks (see
// common.mjs). When the process exits it writes one JSON line on fd 3:
// - maxRssKiB: the peak resident set size;
// - v8StartMs, environmentMs: Node's own marks (performance.nodeTiming), when
//   V8 started and when the heap and context were ready (deserialized from
//   the startup snapshot, for a start from it);
// - codeStartMs: when this preload ran, which is just before dsh's own code
//   (the launcher runs preloads first thing, as plain node does);
// - firstRequestMs: when undici sent the headers of the process's first HTTP
//   request, or null.
// All times are performance.now() of the dsh process: ms since it started.
// CommonJS, so that it does not start Node's ES module loader, which dsh
// itself does not need.
const codeStartMs = performance.now()
const dc = require('node:diagnostics_channel')
const { writeSync } = require('node:fs')

let firstRequestMs = null
const onHeaders = () => {
  firstRequestMs ??= performance.now()
}
dc.subscribe('undici:client:sendHeaders', onHeaders)

process.on('exit', () => {
  const { v8Start, environment } = performance.nodeTiming
  const report = {
    maxRssKiB: process.resourceUsage().maxRSS,
    v8StartMs: v8Start,
    environmentMs: environment,
    codeStartMs,
    firstRequestMs,
  }
  try {
    writeSync(3, `${JSON.stringify(report)}\n`)
  } catch {
    // fd 3 is only open under the benchmark
  }
})
