// The browser app under load: a stored session of 1,000 messages opened in
// headless Chromium (time to the first paint of the restored conversation),
// a reply streamed into it at 100 tokens per second (frame rate, longest
// frame, layout shift), and the page's memory.
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { childEnv, dshCommand, importLib, median, ms, range, root, row, sandbox, startTimedMock } from './common.mjs'
import { sessionEvents } from './session-log.mjs'

const MESSAGES = 1000
const PAINT_TARGET_MS = 1000
const FPS_TARGET = 50
/** One word per delta, 10 ms apart: about 100 tokens per second. */
const STREAM_WORDS = 500
const STREAM_DELAY_MS = 10
const CHROMIUM = process.env.DSH_CHROMIUM ?? '/usr/bin/chromium'
const DIST = path.join(root, 'apps/web/dist/index.html')

const isMessage = (e) => e.type === 'user/message' || e.type === 'assistant/message' || e.type === 'tool/result'

/** The smallest generated log with at least MESSAGES model-visible messages. */
function thousandMessages(cwd) {
  let low = MESSAGES
  let high = MESSAGES * 4
  while (low < high) {
    const mid = (low + high) >> 1
    if (sessionEvents({ count: mid, cwd }).filter(isMessage).length >= MESSAGES) high = mid
    else low = mid + 1
  }
  return sessionEvents({ count: low, cwd })
}

/** Starts `dsh web --port 0 --no-open` and resolves with its origin once it listens. */
function startWeb(home, cwd, env) {
  const [command, args, launcherEnv] = dshCommand(['web', '--port', '0', '--no-open'])
  const child = spawn(command, args, {
    cwd,
    env: childEnv({ DSH_HOME: home, ...launcherEnv, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const origin = new Promise((resolve, reject) => {
    const limit = setTimeout(() => reject(new Error(`dsh web did not print its URL within 30 s\n${stderr}`)), 30_000)
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      const match = stdout.match(/dsh web: (http:\/\/\S+)/)
      if (match) {
        clearTimeout(limit)
        resolve(new URL(match[1]).origin)
      }
    })
    child.on('exit', (code) => reject(new Error(`dsh web exited ${code} before listening\n${stderr}`)))
  })
  return {
    origin,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.on('exit', () => resolve())
        child.kill('SIGTERM')
      }),
  }
}

/** Waits for the app's performance mark `name`; resolves with its time from navigation start. */
async function markTime(page, name) {
  const mark = await page.waitForFunction((mark) => performance.getEntriesByName(mark)[0]?.startTime, name, {
    timeout: 30_000,
  })
  return mark.jsonValue()
}

/** In-page frame recorder: every animation frame's timestamp and the layout shifts, until `stop()`. */
function recordFrames() {
  const w = window
  w.__frames = []
  w.__shift = 0
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (!entry.hadRecentInput) w.__shift += entry.value
  }).observe({ type: 'layout-shift' })
  const tick = (t) => {
    w.__frames.push(t)
    if (!w.__stopFrames) requestAnimationFrame(tick)
  }
  requestAnimationFrame(tick)
}

export async function run({ runs, name }) {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian chromium or set DSH_CHROMIUM`)
  if (!existsSync(DIST)) throw new Error('apps/web/dist is missing: run `pnpm build` first')
  const { chromium } = createRequire(path.join(root, 'apps/web/package.json'))('playwright-core')
  const { Context } = await importLib('packages/boot/cordis/lib/index.js')
  const jsonl = await importLib('packages/session/persistence-jsonl/lib/index.js')
  const { reply } = await importLib('packages/test-support/llm-mock/lib/index.js')

  const box = await sandbox(name)
  const words = Array.from({ length: STREAM_WORDS }, (_, i) => `token${i}`).join(' ')
  const server = await startTimedMock((request) =>
    request.body?.tools?.length
      ? reply.text(words, { delayMs: STREAM_DELAY_MS, keepAlive: false })
      : reply.text('Title', { keepAlive: false }),
  )
  let web
  let browser
  try {
    // The stored session, written and sealed through the real JSONL provider:
    // one copy per load, so that every load is the first opening of its log
    // (the server keeps a log it read for a few seconds, for the requests of one opening).
    const ctx = new Context()
    await ctx.plugin(jsonl, { root: path.join(box.home, 'sessions') })
    const events = thousandMessages(box.workspace)
    const ids = []
    for (let i = 0; i < runs + 2; i++) {
      const id = `session-${randomUUID()}`
      await ctx.sessionPersistence.append({ id, createdAt: events[0].time, cwd: box.workspace }, events)
      await ctx.sessionPersistence.seal(id)
      ids.push(id)
    }
    await ctx.fiber.dispose()

    web = startWeb(box.home, box.workspace, server.env)
    const origin = await web.origin
    const { chromiumArgs } = await importLib('packages/test-support/testkit/lib/index.js')
    browser = await chromium.launch({ executablePath: CHROMIUM, args: [...chromiumArgs] })
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })

    // First paint of the restored session; one cold page load first, not counted.
    const paint = async () => {
      const page = await context.newPage()
      await page.goto(`${origin}/#/session/${encodeURIComponent(ids.shift())}`)
      const value = await markTime(page, 'dsh:session-painted')
      // The first paint shows the recent part of the log; the app reads the rest after it.
      const whole = await markTime(page, 'dsh:session-whole')
      const [start, api] = await page.evaluate(() => [
        performance.getEntriesByName('dsh:app-start')[0]?.startTime ?? Number.NaN,
        performance.getEntriesByType('resource').find((e) => e.name.includes('/api/sessions/')),
      ])
      return { page, value, whole, start, api }
    }
    await (await paint()).page.close()
    const paints = []
    const wholes = []
    const starts = []
    const requests = []
    const loads = []
    for (let i = 0; i < runs; i++) {
      const { page, value, whole, start, api } = await paint()
      paints.push(value)
      wholes.push(whole)
      starts.push(start)
      requests.push(api.requestStart)
      loads.push(api.responseEnd)
      await page.close()
    }

    // Memory of the page holding the session, then a reply streamed into it.
    const { page } = await paint()
    const cdp = await context.newCDPSession(page)
    await cdp.send('Performance.enable')
    const metric = async (key) =>
      (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === key)?.value ?? Number.NaN
    await cdp.send('HeapProfiler.collectGarbage')
    const heapLoaded = await metric('JSHeapUsedSize')
    const nodesLoaded = await metric('Nodes')

    // Polled every 100 ms: Playwright's own text matching each frame would cost the page more than the app does.
    await page.evaluate(recordFrames)
    const input = page.getByRole('combobox', { name: 'Message' })
    await input.fill('Stream a long answer')
    await input.press('Enter')
    await page.waitForFunction(
      () => document.querySelector('[data-node="assistant-text"][aria-busy="true"]'),
      undefined,
      { polling: 100, timeout: 30_000 },
    )
    const start = await page.evaluate(() => performance.now())
    await page.waitForFunction(
      () => !document.querySelector('[data-node="assistant-text"][aria-busy="true"]'),
      undefined,
      { polling: 100, timeout: 60_000 },
    )
    const { frames, shift } = await page.evaluate((from) => {
      window.__stopFrames = true
      return { frames: window.__frames.filter((t) => t >= from), shift: window.__shift }
    }, start)
    const seconds = (frames.at(-1) - frames[0]) / 1000
    const fps = (frames.length - 1) / seconds
    const gaps = frames.slice(1).map((t, i) => t - frames[i])
    const longest = Math.max(...gaps)
    await cdp.send('HeapProfiler.collectGarbage')
    const heapAfter = await metric('JSHeapUsedSize')
    const mibOf = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

    const paintMedian = median(paints)
    return {
      rows: [
        row(
          `first paint of a ${MESSAGES}-message session, median`,
          ms(paintMedian),
          `< ${PAINT_TARGET_MS} ms`,
          paintMedian < PAINT_TARGET_MS,
        ),
        row('first paint, min / max', `${range(paints)} ms`),
        row('  app script running, median', ms(median(starts))),
        row(
          '  GET /api/sessions/:id (recent part) sent / answered, median',
          `${ms(median(requests))} / ${ms(median(loads))}`,
        ),
        row('whole conversation loaded (the earlier part read after the paint), median', ms(median(wholes))),
        row(
          'frame rate while streaming 100 tokens/s',
          `${fps.toFixed(1)} fps`,
          `>= ${FPS_TARGET} fps`,
          fps >= FPS_TARGET,
        ),
        row('longest frame while streaming', ms(longest)),
        row('layout shift score while streaming', shift.toFixed(4)),
        row('JS heap after opening the session', mibOf(heapLoaded)),
        row('JS heap after streaming the reply', mibOf(heapAfter)),
        row('DOM nodes after opening the session', String(nodesLoaded)),
      ],
      note: `${events.length} events, ${events.filter(isMessage).length} messages; streamed ${STREAM_WORDS} words over ${seconds.toFixed(1)} s; first paint is from navigation start`,
    }
  } finally {
    await browser?.close()
    await web?.stop()
    await server.close()
    await box.dispose()
  }
}
