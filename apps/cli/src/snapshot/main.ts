// The entry of the startup snapshot bundle (see scripts/snapshot/build.mjs).
// At build time it evaluates every in-box module, so their code is compiled
// and their top levels have run when the snapshot is taken. At run time it
// starts the launcher with those modules, unless the snapshot does not belong
// to the installation it is started from.
import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { startupSnapshot } from 'node:v8'
import { type PreloadedModules, preparseShippedBundles } from '@dsh/app-boot'
import { restoreLauncherEnvironment, start } from '../start.ts'
import { blobOf, preloadsOf } from './preloads.ts'
import { reportStartup, SNAPSHOT_PROBE_ANSWER, SNAPSHOT_PROBE_ENV } from './startup-report.ts'

type Importer = () => Promise<Record<string, unknown>>

/** Shared with prelude.cjs. */
interface SnapshotHost {
  building: boolean
  root: string
  /** The CLI package's folder, relative to `root`. */
  cliDir: string
  files: Record<string, string>
  current: string | undefined
  /** Puts back what the prelude changed for the build; called once every module is evaluated. */
  finishBuild(): void
}

const host = (globalThis as Record<symbol, unknown>)[Symbol.for('dsh.snapshot')] as SnapshotHost

/** What the build script reads from stderr when a module cannot be evaluated at build time. */
const DEFER_MARK = 'dsh-snapshot-defer:'

/**
 * Evaluates the in-box modules (except those the build script defers to run
 * time) and registers the function that runs when the process starts from the
 * snapshot. `importers` maps each specifier to the bundle's lazy import of it.
 */
export function prepare(importers: Record<string, Importer>, deferred: readonly string[]): void {
  const preloaded: PreloadedModules = new Map(
    Object.entries(importers).map(([specifier, load]) => {
      let module: Promise<Record<string, unknown>> | undefined
      const file = path.join(host.root, host.files[specifier] as string)
      return [specifier, { file, load: () => (module ??= load()) }]
    }),
  )

  void (async () => {
    for (const [specifier, module] of preloaded) {
      if (deferred.includes(specifier)) continue
      host.current = specifier
      try {
        await module.load()
      } catch (error) {
        process.stderr.write(
          `${DEFER_MARK}${JSON.stringify({ specifier, reason: (error as Error).stack ?? String(error) })}\n`,
        )
        process.exit(3)
      }
    }
    host.current = undefined
    // A bundle file that does not parse is left to the launcher, which reports it when it reads the file.
    await preparseShippedBundles(path.join(host.root, host.cliDir)).catch(() => {})
    host.finishBuild()
  })()

  startupSnapshot.setDeserializeMainFunction(() => {
    host.building = false
    void run(preloaded)
  })
}

async function run(preloaded: PreloadedModules): Promise<void> {
  restoreLauncherEnvironment()
  // The launcher passes lib/bin.js as the first argument, as plain node would see it.
  const bin = path.resolve(process.argv[1] ?? '')
  const installDir = path.dirname(path.dirname(bin))
  const helper = path.join(installDir, 'lib/snapshot/import.cjs')
  const dynamicImport = (specifier: string) =>
    (createRequire(helper)(helper) as (specifier: string) => Promise<unknown>)(specifier)
  if (realDir(installDir) !== realDir(path.join(host.root, host.cliDir))) {
    // Paths computed at build time point into another installation: run the plain entry.
    await dynamicImport(pathToFileURL(bin).href)
    return
  }
  // Whoever built the blob for an installed package checks that it starts (apps/cli/src/snapshot/cache.ts).
  if (process.env[SNAPSHOT_PROBE_ENV] === '1') {
    process.stdout.write(SNAPSHOT_PROBE_ANSWER)
    return
  }
  reportStartup(`from the startup snapshot ${blobOf(process.execArgv) ?? ''}`.trimEnd())
  // Node does not run --import / --require preloads for a snapshot's main function.
  for (const { kind, specifier } of preloadsOf(process.execArgv, process.env.NODE_OPTIONS)) {
    const isPath = path.isAbsolute(specifier) || /^\.\.?[\\/]/.test(specifier)
    const target = isPath ? path.resolve(specifier) : specifier
    if (kind === 'require') createRequire(path.join(process.cwd(), 'preload.js'))(target)
    else await dynamicImport(isPath ? pathToFileURL(target).href : target)
  }
  await start({ installDir, preloaded })
}

function realDir(dir: string): string | undefined {
  try {
    return realpathSync(dir)
  } catch {
    return undefined
  }
}
