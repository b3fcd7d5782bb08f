import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { type MockLlm, type RecordedRequest, startMockLlm } from '@dsh/llm-mock'
import { type DshResult, runDsh, tempDir } from '@dsh/testkit'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'

export interface MockedHeadless {
  /** One scripted model server for the test file, reset before each test. */
  mock: MockLlm
  /** A fresh temp folder per test holding `home` (DSH_HOME) and `work` (the workspace, the run's cwd). */
  root: string
  home: string
  work: string
  /** The environment that points dsh at the mock. */
  env(): Record<string, string>
  /**
   * Runs `dsh --profile headless <args>` in the workspace; `extraEnv` may unset
   * variables with undefined; `input` is written to its standard input.
   */
  headless(args: string[], extraEnv?: Record<string, string | undefined>, input?: string): Promise<DshResult>
}

/** Registers the hooks of an end-to-end file that runs headless dsh against the mock server. */
export function useMockedHeadless(): MockedHeadless {
  let cleanup: () => Promise<void> = async () => {}
  // Filled in by the hooks below; tests read it only inside them.
  const t = {} as MockedHeadless
  t.env = () => ({ DEEPSEEK_BASE_URL: t.mock.url, DEEPSEEK_API_KEY: 'sk-test-key' })
  t.headless = (args, extraEnv = {}, input) =>
    runDsh(['--profile', 'headless', ...args], {
      home: t.home,
      cwd: t.work,
      env: { ...t.env(), ...extraEnv },
      ...(input === undefined ? {} : { input }),
    })
  beforeAll(async () => {
    t.mock = await startMockLlm()
  })
  afterAll(() => t.mock.close())
  beforeEach(async () => {
    t.mock.reset()
    const tmp = await tempDir()
    cleanup = tmp.dispose
    t.root = tmp.dir
    t.home = path.join(tmp.dir, 'home')
    t.work = path.join(tmp.dir, 'work')
    await mkdir(t.work, { recursive: true })
  })
  afterEach(() => cleanup())
  return t
}

/** The text of the tool results a model request carried, in order. */
export function toolTexts(request: RecordedRequest | undefined): string[] {
  return (request?.body.messages ?? [])
    .filter((m: { role: string }) => m.role === 'tool')
    .map((m: { content: string }) => m.content)
}
