// Builds the startup snapshot of an installed dsh into its cache folder (see
// src/snapshot/cache.ts). Started detached by the first run that finds none:
//   node lib/build-snapshot.js <installDir> <cacheDir> <dsh version>
// It evaluates the package's bundle with `node --build-snapshot` (modules that
// cannot be evaluated then are left to run time, as in the checkout's build),
// tries the new blob once, and only then moves it into place and writes the
// record that makes runs use it. One builder per folder (a lock file); a
// failure is written to failed.json and build.log, and the plain entry stays.
import { spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import {
  BLOB_FILE,
  FAILED_FILE,
  INSTALLED_BUNDLE,
  LOCK_FILE,
  LOG_FILE,
  RECORD_FILE,
  type SnapshotRecord,
  snapshotKey,
} from './snapshot/cache.ts'
import { SNAPSHOT_PROBE_ANSWER, SNAPSHOT_PROBE_ENV } from './snapshot/startup-report.ts'

/** What the snapshot's entry writes on stderr when a module cannot be evaluated at build time (see main.ts). */
const DEFER_MARK = 'dsh-snapshot-defer:'
/** A lock older than this belongs to a builder that died. */
const STALE_LOCK_MS = 10 * 60_000

const [installDir, dir, dshVersion] = process.argv.slice(2) as [string, string, string]
const logFile = path.join(dir, LOG_FILE)
const log = (text: string) => writeFileSync(logFile, `${new Date().toISOString()} ${text}\n`, { flag: 'a' })

function takeLock(file: string): boolean {
  try {
    closeSync(openSync(file, 'wx'))
    return true
  } catch {
    try {
      if (Date.now() - statSync(file).mtimeMs < STALE_LOCK_MS) return false
      rmSync(file, { force: true })
      closeSync(openSync(file, 'wx'))
      return true
    } catch {
      return false
    }
  }
}

function build(tmpBlob: string): void {
  const deferred: string[] = []
  for (;;) {
    rmSync(tmpBlob, { force: true })
    const result = spawnSync(
      process.execPath,
      ['--snapshot-blob', tmpBlob, '--build-snapshot', path.join(installDir, INSTALLED_BUNDLE)],
      {
        cwd: installDir,
        env: {
          ...process.env,
          NODE_OPTIONS: '',
          DSH_SNAPSHOT_ROOT: installDir,
          DSH_SNAPSHOT_DEFER: deferred.join(','),
        },
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      },
    )
    const mark = result.stderr.split('\n').find((line) => line.startsWith(DEFER_MARK))
    if (result.status === 3 && mark) {
      const { specifier } = JSON.parse(mark.slice(DEFER_MARK.length)) as { specifier: string }
      if (deferred.includes(specifier)) throw new Error(`${specifier} failed again after being deferred:\n${mark}`)
      deferred.push(specifier)
      log(`${specifier} is evaluated at run time`)
      continue
    }
    if (result.status !== 0) {
      throw new Error(`node --build-snapshot exited ${result.status ?? result.signal}:\n${result.stderr.slice(-4000)}`)
    }
    return
  }
}

/** Starts dsh from the new blob in probe mode: it must get as far as dsh's own start in this installation. */
function probe(tmpBlob: string): void {
  const result = spawnSync(process.execPath, ['--snapshot-blob', tmpBlob, path.join(installDir, 'lib/bin.js')], {
    cwd: installDir,
    env: { ...process.env, NODE_OPTIONS: '', [SNAPSHOT_PROBE_ENV]: '1' },
    encoding: 'utf8',
  })
  if (result.status !== 0 || result.stdout !== SNAPSHOT_PROBE_ANSWER)
    throw new Error(`the new blob does not start dsh (exit ${result.status ?? result.signal}):\n${result.stderr}`)
}

mkdirSync(dir, { recursive: true, mode: 0o700 })
const lock = path.join(dir, LOCK_FILE)
if (takeLock(lock)) {
  const tmpBlob = path.join(dir, `${BLOB_FILE}.${process.pid}.tmp`)
  const blob = path.join(dir, BLOB_FILE)
  const record = path.join(dir, RECORD_FILE)
  try {
    const started = Date.now()
    // A run that finds the record and a different blob builds again: the old record goes first.
    rmSync(record, { force: true })
    build(tmpBlob)
    probe(tmpBlob)
    renameSync(tmpBlob, blob)
    const { size, mtimeMs } = statSync(blob)
    const value: SnapshotRecord = { ...snapshotKey(installDir, dshVersion), blobSize: size, blobMtimeMs: mtimeMs }
    writeFileSync(`${record}.${process.pid}.tmp`, `${JSON.stringify(value, null, 2)}\n`)
    renameSync(`${record}.${process.pid}.tmp`, record)
    log(`built ${blob} (${(size / 2 ** 20).toFixed(1)} MiB) in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  } catch (error) {
    log(`no startup snapshot: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
    writeFileSync(path.join(dir, FAILED_FILE), `${JSON.stringify({ reason: String(error) })}\n`)
  } finally {
    rmSync(tmpBlob, { force: true })
    rmSync(lock, { force: true })
  }
}
