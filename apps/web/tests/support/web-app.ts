/// <reference types="node" />
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
// Relative imports: apps/web does not list the test-support packages as dependencies.
import { type MockLlm, type MockReply, type RecordedRequest, reply, startMockLlm } from '@dsh/llm-mock'
import { chromiumArgs, chromiumPath, type DshProcess, repoRoot, startDshWeb, tempDir } from '@dsh/testkit'

export const SCREENSHOTS = path.join(repoRoot, 'apps/web/tests/screenshots')
const DIST = path.join(repoRoot, 'apps/web/dist/index.html')

/** Limits for a loaded 2-core machine (a browser, dsh and the mock per test); never a timing assertion. */
export const TEST_TIMEOUT_MS = 120_000
const HOOK_TIMEOUT_MS = 60_000

export type AgentScript = MockReply | ((request: RecordedRequest) => MockReply | Promise<MockReply>)

export interface WebApp {
  mock: MockLlm
  home: string
  work: string
  /** The page's origin, e.g. http://127.0.0.1:41234 */
  url: string
  dsh: DshProcess
  page: Page
  context: BrowserContext
  /** Scripts the agent's model calls in order; calls without tools (titles, summaries) get a short text. */
  script(...replies: AgentScript[]): void
  /** Calls the API from Node, as the page would. */
  api<T = unknown>(method: string, route: string, body?: unknown): Promise<T>
  /** Saves a screenshot for review under apps/web/tests/screenshots/. */
  screenshot(name: string, page?: Page): Promise<void>
  /** Opens the app, sends `text` from the composer and waits for the new session's page. */
  start(text: string): Promise<Page>
}

export interface WebAppOptions {
  /** Files to create in the workspace before dsh starts. */
  files?: Record<string, string>
  /** Runs before dsh starts, with the fresh DSH_HOME and workspace (to store sessions there, say). */
  prepareHome?: (home: string, work: string) => Promise<void>
  viewport?: { width: number; height: number }
  colorScheme?: 'light' | 'dark'
}

/** The message box. */
export function composer(page: Page) {
  return page.getByRole('combobox', { name: 'Message' })
}

/** Types `text` into the message box and sends it with `key` (Enter sends or steers, Alt+Enter queues). */
export async function send(page: Page, text: string, key = 'Enter'): Promise<void> {
  await composer(page).fill(text)
  await composer(page).press(key)
}

/** The card of a finished edit and the diff it shows, once the diff is on the page. */
export async function finishedEdit(page: Page) {
  const card = page.locator('[data-node="tool"][data-tool="edit"][data-status="done"]')
  const diff = card.locator('[data-testid="diff"]')
  await diff.waitFor()
  return { card, diff }
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(chromiumPath))
    throw new Error(
      `${chromiumPath} is missing: install Debian chromium (apt-get install chromium), or set DSH_CHROMIUM`,
    )
  return chromium.launch({ executablePath: chromiumPath, args: [...chromiumArgs] })
}

/**
 * Registers the hooks of a browser test file: one mock model server and one
 * Chromium per file; per test a fresh DSH_HOME and workspace, `dsh web
 * --port 0 --no-open` from the built bin, and a new browser page on it.
 */
export function useWebApp(options: WebAppOptions = {}): WebApp {
  const t = {} as WebApp
  let browser: Browser
  let cleanup: () => Promise<void> = async () => {}

  beforeAll(async () => {
    if (!existsSync(DIST))
      throw new Error(`${DIST} is missing: run pnpm build (or pnpm build:web) before the browser tests`)
    t.mock = await startMockLlm()
    browser = await launchChromium()
  }, HOOK_TIMEOUT_MS)
  afterAll(async () => {
    await browser?.close()
    await t.mock?.close()
  })

  beforeEach(async () => {
    t.mock.reset()
    t.mock.setFallback(undefined)
    const tmp = await tempDir('dsh-web-test-')
    t.home = path.join(tmp.dir, 'home')
    t.work = path.join(tmp.dir, 'work')
    await mkdir(t.work, { recursive: true })
    for (const [name, text] of Object.entries(options.files ?? {})) {
      await mkdir(path.dirname(path.join(t.work, name)), { recursive: true })
      await writeFile(path.join(t.work, name), text)
    }
    await options.prepareHome?.(t.home, t.work)
    const web = await startDshWeb(
      { home: t.home, cwd: t.work, env: { DEEPSEEK_BASE_URL: t.mock.url, DEEPSEEK_API_KEY: 'sk-test-key' } },
      HOOK_TIMEOUT_MS,
    )
    t.dsh = web.dsh
    t.url = web.origin
    t.context = await browser.newContext({
      viewport: options.viewport ?? { width: 1280, height: 800 },
      colorScheme: options.colorScheme ?? 'light',
    })
    t.page = await t.context.newPage()
    cleanup = async () => {
      await t.context.close()
      await t.dsh.kill()
      await tmp.dispose()
    }
  }, HOOK_TIMEOUT_MS)
  afterEach(() => cleanup(), HOOK_TIMEOUT_MS)

  t.script = (...replies) => {
    const queue = [...replies]
    t.mock.setFallback((request) => {
      if (!request.body?.tools?.length) return reply.text('Test session')
      const next = queue.shift()
      if (!next) return reply.error(500, { message: `the test script ran out at request #${request.seq}` })
      return typeof next === 'function' ? next(request) : next
    })
  }
  t.api = async (method, route, body) => {
    const response = await fetch(t.url + route, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await response.text()
    if (!response.ok) throw new Error(`${method} ${route} answered ${response.status}: ${text}`)
    return (text ? JSON.parse(text) : {}) as never
  }
  t.screenshot = async (name, page = t.page) => {
    await mkdir(SCREENSHOTS, { recursive: true })
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) })
  }
  t.start = async (text) => {
    await t.page.goto(t.url)
    await send(t.page, text)
    await t.page.waitForURL(/#\/session\//)
    return t.page
  }
  return t
}
