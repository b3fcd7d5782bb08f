import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Context, type Fiber } from '@dsh/cordis'
import * as fsPlugin from '@dsh/fs'
import type { ToolCallId } from '@dsh/llm'
import * as spillPlugin from '@dsh/spill'
import * as tools from '@dsh/tools'
import type { ToolResult, ToolRunOptions, ToolsConfig } from '@dsh/tools'
import { expect } from 'vitest'
import * as fsTools from '../src/index.ts'
import type { FsToolsConfig } from '../src/index.ts'

export interface Setup {
  root: Context
  /** Temporary folder holding `workspace`, `outside` and the spill root. */
  base: string
  /** The session cwd (a real path). */
  workspace: string
  /** A sibling of the workspace. */
  outside: string
  spillRoot: string
  session: ToolRunOptions
  /** The fiber of the local `ctx.fs` provider. */
  fsFiber: Fiber
  run(name: string, args: unknown, options?: ToolRunOptions): Promise<ToolResult>
  dispose(): Promise<void>
}

let calls = 0

/** A root context with `ctx.tools`, `ctx.fs` (local), optionally `ctx.spill`, and the file tools. */
export async function setup(
  options: { config?: Partial<FsToolsConfig>; spill?: boolean; fs?: (base: string) => fsPlugin.LocalFsConfig } = {},
): Promise<Setup> {
  const root = new Context()
  const base = await realpath(await mkdtemp(path.join(tmpdir(), 'dsh-tool-fs-')))
  const workspace = path.join(base, 'ws')
  const outside = path.join(base, 'outside')
  const spillRoot = path.join(base, 'spill')
  await mkdir(workspace)
  await mkdir(outside)
  await root.plugin(tools, {} as ToolsConfig)
  const fsFiber = root.plugin(fsPlugin, options.fs?.(base) ?? {})
  await fsFiber
  if (options.spill) await root.plugin(spillPlugin, { root: spillRoot, keepOnDispose: false })
  await root.plugin(fsTools, (options.config ?? {}) as FsToolsConfig)
  const session: ToolRunOptions = {
    signal: new AbortController().signal,
    cwd: workspace,
    sessionId: 'tool-fs-session',
    sessionState: new Map(),
  }
  return {
    root,
    base,
    workspace,
    outside,
    spillRoot,
    session,
    fsFiber,
    run(name, args, runOptions = session) {
      calls += 1
      const raw = typeof args === 'string' ? args : JSON.stringify(args)
      return root.tools.execute({ callId: `c${calls}` as ToolCallId, name, arguments: raw }, runOptions)
    },
    async dispose() {
      await root.fiber.dispose()
      await rm(base, { recursive: true, force: true })
    },
  }
}

export function text(result: ToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}

/** Runs each call and checks that it fails with `code` and a message holding each of `says`. */
export async function expectEachFails(
  s: Setup,
  calls: ReadonlyArray<readonly [string, unknown]>,
  code: string,
  ...says: string[]
): Promise<void> {
  for (const [name, args] of calls) {
    const result = await s.run(name, args)
    expect(result.error?.code, name).toBe(code)
    for (const words of says) expect(text(result), name).toContain(words)
  }
}
