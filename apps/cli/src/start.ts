import { setFlagsFromString } from 'node:v8'
import { launch, type PreloadedModules } from '@dsh/app-boot'
import manifest from '../package.json' with { type: 'json' }

export interface StartOptions {
  /** The installation folder (apps/cli), whose dependencies hold the shipped bundles and plugins. */
  installDir: string
  /** In-box modules already evaluated (the startup snapshot). */
  preloaded?: PreloadedModules
}

/**
 * Puts back the GLIBC_TUNABLES the `dsh` launcher changed for node itself
 * (see scripts/snapshot/build.mjs), so the commands dsh runs get the user's.
 * The launcher keeps the user's value in DSH_LAUNCHER_GLIBC_TUNABLES: empty
 * when it was unset, else `=` and the value.
 */
export function restoreLauncherEnvironment(env: NodeJS.ProcessEnv = process.env): void {
  const saved = env.DSH_LAUNCHER_GLIBC_TUNABLES
  if (saved === undefined) return
  delete env.DSH_LAUNCHER_GLIBC_TUNABLES
  if (saved === '') delete env.GLIBC_TUNABLES
  else env.GLIBC_TUNABLES = saved.slice(1)
}

/** Runs the launcher on the process arguments and exits with its code. */
export async function start(options: StartOptions): Promise<void> {
  restoreLauncherEnvironment()
  // undici parses HTTP with a WebAssembly module; V8's optimising tier compiles
  // it in the background and process exit waits for that (~150 ms per run).
  // The baseline tier is fast enough for response parsing.
  setFlagsFromString('--liftoff-only')
  // A run that ends while V8 marks the heap on its helper threads waits for that marking at exit (~5 ms for a
  // one-shot task). Marked on the main thread, in the same small incremental steps, a short run exits at once; a
  // long-running surface pays the marking on its own thread, which at dsh's heap sizes is a few milliseconds.
  setFlagsFromString('--no-concurrent-marking')

  // Anything that escapes the launcher is a bug: say so on one line and exit 1.
  const fatal = (error: unknown) => {
    process.stderr.write(`dsh: fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(1)
  }
  process.on('unhandledRejection', fatal)
  process.on('uncaughtException', fatal)

  const code = await launch({
    argv: process.argv.slice(2),
    installDir: options.installDir,
    version: manifest.version,
    preloaded: options.preloaded,
  }).catch((error: unknown) => {
    fatal(error)
    return 1
  })
  // Let stdout drain before exiting; a piped reader must get every byte.
  process.stdout.write('', () => process.exit(code))
}
