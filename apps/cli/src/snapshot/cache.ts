// The startup snapshot of an installed package (the release tarball of
// scripts/release/pack.mjs). A blob holds absolute paths and only loads in
// the node binary that made it, so it cannot ship: the package ships the
// bundle it is made from (lib/snapshot/installed.cjs), and the first run that
// would use it starts a detached builder (build-snapshot.ts) and goes on the
// plain way. The builder writes the blob into $DSH_HOME/cache/snapshot/, in a
// folder keyed by the dsh version, the node binary and the installation, and
// writes its record (snapshot.json) last; later runs start node from it. The
// plain entry is always there: a missing, stale or damaged blob, or a failed
// build, only means a slower start.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs'
import path from 'node:path'
import { resolveHome } from '@dsh/app-boot/home'
import { splitNodeOptions } from './preloads.ts'

/** `DSH_SNAPSHOT=off` keeps an installed dsh on the plain entry and builds nothing. */
export const SNAPSHOT_ENV = 'DSH_SNAPSHOT'

/** The bundle a release package ships to build its blob from. */
export const INSTALLED_BUNDLE = 'lib/snapshot/installed.cjs'
/** The builder entry, run detached with node. */
export const BUILDER = 'lib/build-snapshot.js'

export const BLOB_FILE = 'dsh.blob'
export const RECORD_FILE = 'snapshot.json'
export const FAILED_FILE = 'failed.json'
export const LOCK_FILE = 'build.lock'
export const LOG_FILE = 'build.log'

/** What a blob was made for; a blob is used only when all of it still holds. */
export interface SnapshotKey {
  dshVersion: string
  node: string
  arch: string
  platform: string
  execPath: string
  execMtimeMs: number
  execSize: number
  installDir: string
}

/** The key, plus the blob file as the builder left it (any later write changes its size or time). */
export interface SnapshotRecord extends SnapshotKey {
  blobSize: number
  blobMtimeMs: number
}

export function snapshotKey(installDir: string, dshVersion: string): SnapshotKey {
  const exec = statSync(process.execPath)
  return {
    dshVersion,
    node: process.version,
    arch: process.arch,
    platform: process.platform,
    execPath: process.execPath,
    execMtimeMs: exec.mtimeMs,
    execSize: exec.size,
    installDir: realpathSync(installDir),
  }
}

/** `$DSH_HOME/cache/snapshot/<dsh version>-<node version>-<hash of the whole key>`. */
export function cacheDirOf(key: SnapshotKey, env: NodeJS.ProcessEnv = process.env): string {
  const hash = createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 12)
  return path.join(resolveHome(env), 'cache', 'snapshot', `${key.dshVersion}-${key.node}-${hash}`)
}

export type StartChoice =
  | { kind: 'snapshot'; blob: string }
  | { kind: 'plain'; reason: string; build?: { installDir: string; dir: string } }

/** Node options that leave V8's configuration alone; any other makes node refuse a blob. */
const HARMLESS_NODE_OPTIONS = new Set([
  '--no-warnings',
  '--no-deprecation',
  '--trace-warnings',
  '--trace-deprecation',
  '--enable-source-maps',
  '--use-openssl-ca',
  '--use-bundled-ca',
])

function nodeOptionsFit(text: string): boolean {
  const words = splitNodeOptions(text)
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string
    if (word === '--import' || word === '--require' || word === '-r') i++
    else if (!(word.startsWith('--import=') || word.startsWith('--require=') || HARMLESS_NODE_OPTIONS.has(word)))
      return false
  }
  return true
}

/** Commands that boot no plugin tree load less on the plain entry than the snapshot holds. */
const PLAIN_COMMANDS = new Set(['--dump-config', '--dump-default-config', '--help', '-h', '--version', '-V'])

function readRecord(file: string): SnapshotRecord | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as SnapshotRecord
  } catch {
    return undefined
  }
}

/** How an installed dsh should start this time, and whether a blob should be built for the next. */
export function chooseStart(options: {
  installDir: string
  dshVersion: string
  args: readonly string[]
  execArgv: readonly string[]
  env: NodeJS.ProcessEnv
}): StartChoice {
  const { installDir, env } = options
  if (env[SNAPSHOT_ENV] === 'off') return { kind: 'plain', reason: `${SNAPSHOT_ENV}=off` }
  if (!existsSync(path.join(installDir, INSTALLED_BUNDLE)))
    return { kind: 'plain', reason: `no ${INSTALLED_BUNDLE} in ${installDir}` }
  if (options.args.some((arg) => PLAIN_COMMANDS.has(arg)))
    return { kind: 'plain', reason: 'this command boots no plugin tree' }
  if (options.execArgv.length > 0 || !nodeOptionsFit(env.NODE_OPTIONS ?? ''))
    return { kind: 'plain', reason: 'node options that a startup snapshot cannot start with' }
  const key = snapshotKey(installDir, options.dshVersion)
  const dir = cacheDirOf(key, env)
  const blob = path.join(dir, BLOB_FILE)
  const recordFile = path.join(dir, RECORD_FILE)
  const record = readRecord(recordFile)
  if (record) {
    if (!Object.entries(key).every(([field, value]) => record[field as keyof SnapshotKey] === value)) {
      const reason = `${recordFile} is for another node binary, dsh version or installation`
      return { kind: 'plain', reason, build: { installDir, dir } }
    }
    const stat = statOf(blob)
    if (stat && stat.size === record.blobSize && stat.mtimeMs === record.blobMtimeMs) return { kind: 'snapshot', blob }
    return { kind: 'plain', reason: `${blob} is not the file its record describes`, build: { installDir, dir } }
  }
  if (existsSync(path.join(dir, FAILED_FILE)))
    return { kind: 'plain', reason: `the startup snapshot could not be built (see ${path.join(dir, LOG_FILE)})` }
  return { kind: 'plain', reason: `no startup snapshot in ${dir} yet`, build: { installDir, dir } }
}

function statOf(file: string): { size: number; mtimeMs: number } | undefined {
  try {
    return statSync(file)
  } catch {
    return undefined
  }
}

/** Starts the builder detached: it outlives this run and nothing of it reaches this run's output. */
export function startBuild(installDir: string, dir: string, dshVersion: string): void {
  try {
    const child = spawn(process.execPath, [path.join(installDir, BUILDER), installDir, dir, dshVersion], {
      detached: true,
      stdio: 'ignore',
      cwd: installDir,
      env: { ...process.env, NODE_OPTIONS: '' },
    })
    child.on('error', () => {})
    child.unref()
  } catch {
    // the next run tries again
  }
}

/** What the launcher asks of glibc's malloc for node (see the launcher in scripts/snapshot/build.mjs). */
const MALLOC_TUNABLES = ['glibc.malloc.hugetlb=1', 'glibc.malloc.arena_max=2']

/**
 * Runs dsh in a node started from `blob` and exits as it exits. The child has
 * this terminal: Ctrl-C reaches it directly, so this process ignores SIGINT;
 * SIGTERM and SIGHUP sent to this process are passed on.
 */
export function runFromSnapshot(blob: string, bin: string, args: readonly string[]): void {
  // As the checkout's launcher does: huge pages and two arenas for node's malloc, where the user set neither;
  // the user's GLIBC_TUNABLES put back at start.
  const env = { ...process.env }
  const tunables = env.GLIBC_TUNABLES
  const added = MALLOC_TUNABLES.filter((tunable) => !tunables?.includes(`${tunable.split('=')[0]}=`))
  if (added.length) {
    env.DSH_LAUNCHER_GLIBC_TUNABLES = tunables === undefined ? '' : `=${tunables}`
    env.GLIBC_TUNABLES = [...(tunables ? [tunables] : []), ...added].join(':')
  }
  const child = spawn(process.execPath, ['--snapshot-blob', blob, bin, ...args], { stdio: 'inherit', env })
  process.on('SIGINT', () => {})
  for (const signal of ['SIGTERM', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal))
  child.on('error', (error) => {
    process.stderr.write(`dsh: fatal: cannot start node from ${blob}: ${error.message}\n`)
    process.exit(1)
  })
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal)
      process.kill(process.pid, signal)
    }
    process.exit(code ?? 1)
  })
}
