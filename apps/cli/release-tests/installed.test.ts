// The release tarballs as a user gets them (`pnpm test:release`, a CI step of
// its own: installing builds the native modules, which takes minutes). Packs
// the built checkout, installs the CLI tarball with `npm install --global`
// into a temporary prefix (dependencies from the npm registry), installs the
// SDK client and plugin-kit tarballs into a temporary TypeScript project, and
// uses them from there: every surface of the installed `dsh`, a typecheck of
// code written against both packages, and the SDK client driving the
// installed `dsh`. Only the model is mocked.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { type MockLlm, reply, startMockLlm } from '@dsh/llm-mock'
import { repoRoot } from '@dsh/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const INSTALL_TIMEOUT_MS = 20 * 60_000

let scratch: string
let prefix: string
let consumer: string
let dsh: string
let mock: MockLlm
let version: string

/** A fresh DSH_HOME and workspace for one run. */
async function box(): Promise<{ home: string; work: string }> {
  const dir = await mkdtemp(path.join(scratch, 'box-'))
  await mkdir(path.join(dir, 'work'))
  return { home: path.join(dir, 'home'), work: path.join(dir, 'work') }
}

/** The environment of an installed dsh: the installed bin first on PATH, the mock as the model, no developer settings. */
function env(home: string): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env))
    if (!key.startsWith('DSH_') && !key.startsWith('DEEPSEEK_') && key !== 'NODE_OPTIONS') out[key] = value
  return {
    ...out,
    PATH: `${path.join(prefix, 'bin')}${path.delimiter}${process.env.PATH ?? ''}`,
    DSH_HOME: home,
    DSH_SESSION_TITLES: 'off',
    DEEPSEEK_BASE_URL: mock.url,
    DEEPSEEK_API_KEY: 'sk-release-test',
  }
}

/** Resolves with the first match of `pattern` in what `child` writes to stdout and stderr (each on its own). */
function waitFor(child: ChildProcess, pattern: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const seen = { stdout: '', stderr: '' }
    for (const stream of ['stdout', 'stderr'] as const) {
      child[stream]?.on('data', (chunk: Buffer) => {
        seen[stream] += chunk.toString('utf8')
        const match = seen[stream].match(pattern)
        if (match) resolve(match)
      })
    }
    child.once('exit', (code) =>
      reject(new Error(`dsh exited (${code}) before ${pattern}; stdout:\n${seen.stdout}\nstderr:\n${seen.stderr}`)),
    )
  })
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode)
    else child.once('exit', (code) => resolve(code))
  })

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'dsh-release-'))
  prefix = path.join(scratch, 'prefix')
  consumer = path.join(scratch, 'consumer')
  await mkdir(prefix)
  await mkdir(consumer)
  mock = await startMockLlm()
  const packed = await run(process.execPath, [path.join(repoRoot, 'scripts/release/pack.mjs')], { cwd: repoRoot })
  const tarballs = packed.stdout.trim().split('\n')
  const tarball = (name: string) => {
    const found = tarballs.find((file) => path.basename(file).startsWith(`${name}-`))
    if (!found) throw new Error(`release:pack wrote no ${name} tarball: ${tarballs.join(', ')}`)
    return found
  }
  version = JSON.parse(readFileSync(path.join(repoRoot, 'apps/cli/package.json'), 'utf8')).version
  const npm = (args: string[], cwd: string) =>
    run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd,
      maxBuffer: 64 * 1024 * 1024,
      // prebuild-install would try to download prebuilt binaries from outside the npm registry first.
      env: { ...process.env, npm_config_build_from_source: 'true' },
    })
  await writeFile(
    path.join(consumer, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  )
  await Promise.all([
    npm(['install', '--global', '--prefix', prefix, tarball('dsh-cli')], scratch),
    npm(['install', tarball('dsh-sdk-client'), tarball('dsh-plugin-kit')], consumer),
  ])
  dsh = path.join(prefix, 'bin', 'dsh')
}, INSTALL_TIMEOUT_MS)

afterAll(async () => {
  await mock?.close()
  // A snapshot builder started by a first run may still be writing its cache folder: retry until it is done.
  if (scratch) await rm(scratch, { recursive: true, force: true, maxRetries: 40, retryDelay: 250 })
})

describe('the installed @dsh/cli', { timeout: 120_000 }, () => {
  it('is a Node entry point that prints its version', async () => {
    expect(readFileSync(dsh, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true)
    const { stdout } = await run(dsh, ['--version'], { env: env(scratch) })
    expect(stdout).toBe(`${version}\n`)
  })

  it('does a headless task against the mock with its native dependencies: ripgrep, the sandbox, sqlite, zstd', async () => {
    const { home, work } = await box()
    mock.reset()
    mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: 'notes/plan.txt', content: 'ship the tarball\n' } }]),
      reply.toolCalls([
        { id: 'call_grep', name: 'grep', arguments: { pattern: 'tarball' } },
        {
          id: 'call_bash',
          name: 'bash',
          arguments: { command: 'wc -l < notes/plan.txt', description: 'count the lines' },
        },
      ]),
      reply.text('Planned.'),
    )
    const child = spawn(dsh, ['--profile', 'headless', 'write the plan'], { cwd: work, env: env(home) })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    expect(await exited(child)).toBe(0)
    expect(stderr).toBe('')
    expect(stdout).toBe('Planned.\n')
    expect(readFileSync(path.join(work, 'notes/plan.txt'), 'utf8')).toBe('ship the tarball\n')
    const tools = (mock.requests[2]?.body.messages ?? []).filter((m: { role: string }) => m.role === 'tool')
    expect(tools.slice(1).map((m: { content: string }) => m.content)).toEqual([
      'notes/plan.txt\n1:ship the tarball',
      '1\n[exit code: 0]',
    ])
    // The log is sealed with zstd, and the catalog (better-sqlite3) lists it.
    expect(readdirSync(path.join(home, 'sessions')).some((file) => file.endsWith('.jsonl.zst'))).toBe(true)
    const listed = await run(dsh, ['sessions', 'list', '--json'], { cwd: work, env: env(home) })
    expect(JSON.parse(listed.stdout)).toEqual({
      sessions: [expect.objectContaining({ cwd: work, preview: 'write the plan' })],
    })
  })

  it('serves the web app: the page and every asset it names answer 200', async () => {
    const { home, work } = await box()
    const child = spawn(dsh, ['web', '--port', '0', '--no-open'], { cwd: work, env: env(home) })
    try {
      const [, url] = (await waitFor(child, /dsh web: (http:\/\/\S+)/)) as unknown as [string, string]
      const page = await fetch(url)
      expect(page.status).toBe(200)
      const html = await page.text()
      expect(html).toMatch(/<div id="root">/)
      const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1] as string)
      expect(assets.length).toBeGreaterThan(0)
      for (const asset of assets) expect([asset, (await fetch(new URL(asset, url))).status]).toEqual([asset, 200])
    } finally {
      child.kill('SIGTERM')
      await exited(child)
    }
  })

  it('answers ACP initialize on stdio', async () => {
    const { home, work } = await box()
    const child = spawn(dsh, ['--profile', 'acp'], { cwd: work, env: env(home) })
    const answer = waitFor(child, /^(\{.*\})\n/m)
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } })}\n`,
    )
    const message = JSON.parse((await answer)[1] as string)
    expect(message).toMatchObject({ jsonrpc: '2.0', id: 1, result: { protocolVersion: 1 } })
    child.stdin.end()
    expect(await exited(child)).toBe(0)
  })
})

/** The one cache folder of `home`'s startup snapshots, once its record describes the blob beside it. */
async function builtSnapshot(home: string): Promise<string> {
  const root = path.join(home, 'cache', 'snapshot')
  for (;;) {
    const dirs = existsSync(root) ? readdirSync(root) : []
    if (dirs.length > 1) throw new Error(`one snapshot folder expected in ${root}: ${dirs.join(', ')}`)
    const dir = path.join(root, dirs[0] ?? '')
    const failed = path.join(dir, 'failed.json')
    if (dirs[0] && existsSync(failed))
      throw new Error(`the snapshot build failed:\n${readFileSync(path.join(dir, 'build.log'), 'utf8')}`)
    const record = path.join(dir, 'snapshot.json')
    if (dirs[0] && existsSync(record)) {
      const { blobSize, blobMtimeMs } = JSON.parse(await readFile(record, 'utf8'))
      const blob = statSync(path.join(dir, 'dsh.blob'), { throwIfNoEntry: false })
      if (blob?.size === blobSize && blob?.mtimeMs === blobMtimeMs) return dir
    }
    await sleep(250)
  }
}

describe('the startup snapshot of the installed dsh', { timeout: 15 * 60_000 }, () => {
  it('is built by the first run for the next, and a damaged or stale one is passed over and built again', async () => {
    const { home, work } = await box()
    const debug = { ...env(home), DSH_DEBUG_STARTUP: '1' }
    const task = async (extra: NodeJS.ProcessEnv = {}) => {
      mock.reset()
      mock.enqueue(reply.text('Done.'))
      const result = await run(dsh, ['--profile', 'headless', 'say done'], { cwd: work, env: { ...debug, ...extra } })
      expect(result.stdout).toBe('Done.\n')
      return result.stderr
    }
    const plain = (reason: string) =>
      `dsh: startup: plain entry (${reason}; building a startup snapshot for the next run)\n`

    const cache = path.join(home, 'cache', 'snapshot')
    expect(await task()).toMatch(/^dsh: startup: plain entry \(no startup snapshot in .+ yet; building .+\)\n$/)
    const dir = await builtSnapshot(home)
    expect(path.dirname(dir)).toBe(cache)
    const blob = path.join(dir, 'dsh.blob')
    expect(await task()).toBe(`dsh: startup: from the startup snapshot ${blob}\n`)

    // Damaged: the file is not the one the builder recorded.
    await writeFile(blob, 'not a startup snapshot')
    expect(await task()).toBe(plain(`${blob} is not the file its record describes`))
    await builtSnapshot(home)
    expect(await task()).toBe(`dsh: startup: from the startup snapshot ${blob}\n`)

    // Stale: the record names another node binary.
    const recordFile = path.join(dir, 'snapshot.json')
    const record = JSON.parse(await readFile(recordFile, 'utf8'))
    await writeFile(recordFile, JSON.stringify({ ...record, node: 'v20.0.0' }))
    expect(await task()).toBe(plain(`${recordFile} is for another node binary, dsh version or installation`))
    await builtSnapshot(home)
    expect(JSON.parse(await readFile(recordFile, 'utf8')).node).toBe(process.version)
    expect(await task()).toBe(`dsh: startup: from the startup snapshot ${blob}\n`)

    // Switched off: the plain entry, and nothing is built.
    expect(await task({ DSH_SNAPSHOT: 'off' })).toBe('dsh: startup: plain entry (DSH_SNAPSHOT=off)\n')
  })
})

describe('the SDK client and plugin-kit tarballs', { timeout: 120_000 }, () => {
  it('typecheck a TypeScript consumer with tsc --noEmit', async () => {
    await writeFile(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'ESNext',
          moduleResolution: 'Bundler',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          // A consumer of a client that starts processes has Node's types (here: the checkout's @types/node).
          types: ['node'],
          typeRoots: [path.join(repoRoot, 'node_modules/@types')],
          lib: ['ES2023'],
        },
        include: ['*.ts'],
      }),
    )
    await writeFile(
      path.join(consumer, 'client.ts'),
      [
        "import { DshClient, type PromptResult, RunError } from '@dsh/sdk-client'",
        'export async function ask(question: string): Promise<string> {',
        "  const client = await DshClient.spawn({ onApproval: () => ({ decision: 'allow-once' }) })",
        '  try {',
        '    const session = await client.newSession({})',
        '    const result: PromptResult = await client.prompt(session.id, question)',
        '    return result.text',
        '  } catch (error) {',
        '    if (error instanceof RunError) return error.message',
        '    throw error',
        '  } finally {',
        '    await client.close()',
        '  }',
        '}',
        '',
      ].join('\n'),
    )
    await writeFile(
      path.join(consumer, 'plugin.ts'),
      [
        "import { type AnySessionEvent, type Context, defineTool, Schema, z } from '@dsh/plugin-kit'",
        'export const name = "shout"',
        "export const inject = ['tools']",
        'export interface Config { suffix: string }',
        "export const Config: Schema<Config> = Schema.object({ suffix: Schema.string().default('!') })",
        'export function apply(ctx: Context, config: Config) {',
        '  ctx.tools.register(',
        '    ctx,',
        '    defineTool({',
        "      name: 'shout',",
        "      description: 'Upper-cases a text.',",
        '      parameters: z.object({ text: z.string() }),',
        "      access: () => ({ kind: 'other', summary: 'shout' }),",
        '      execute: async (args) => ({ content: args.text.toUpperCase() + config.suffix }),',
        '    }),',
        '  )',
        "  ctx.on('session/event', (_session, event) => {",
        '    const typed = event as AnySessionEvent',
        "    if (typed.type === 'tool/result') ctx.logger.info(typed.data.name)",
        '  })',
        '}',
        '',
      ].join('\n'),
    )
    const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc')
    const result = await run(process.execPath, [tsc, '-p', consumer]).catch((error) => error)
    expect(`${result.stdout ?? ''}${result.stderr ?? ''}`).toBe('')
    expect(result.code ?? 0).toBe(0)
  })

  it('the SDK client starts the installed dsh from PATH and runs a prompt', async () => {
    const { home, work } = await box()
    mock.reset()
    mock.enqueue(reply.text('Hello from the installed dsh.'))
    await writeFile(
      path.join(consumer, 'run.mjs'),
      [
        "import { DshClient } from '@dsh/sdk-client'",
        `const client = await DshClient.spawn({ cwd: ${JSON.stringify(work)} })`,
        "console.log(await client.run('say hello'))",
        'await client.close()',
        '',
      ].join('\n'),
    )
    const { stdout } = await run(process.execPath, ['run.mjs'], { cwd: consumer, env: env(home) })
    expect(stdout).toBe('Hello from the installed dsh.\n')
    expect(existsSync(path.join(home, 'sessions'))).toBe(true)
  })
})
