import path from 'node:path'
import { ConfigError, type Layer, renderComposed } from '@dsh/loader/compose'
import { LAUNCHER_HELP, type LaunchRequest, parseLauncherArgs, UsageError } from './args.ts'
import { resolveHome } from './home.ts'
import { compose, readFixedLayers, readUserLayers, userPatchFiles } from './layers.ts'
import type { PreloadedModules } from './modules.ts'
import { runPluginCommand } from './plugin-command.ts'
import { openProfile } from './profile.ts'
import { loadInstalledModule, runSessionsCommand } from './sessions-command.ts'
import { ExitRequest, installSignalHandlers } from './shutdown.ts'

export interface LaunchOptions {
  argv: readonly string[]
  /** The dsh installation: the package whose dependencies hold the shipped bundles and plugins. */
  installDir: string
  version: string
  cwd?: string
  env?: NodeJS.ProcessEnv
  writeOut?: (text: string) => void
  writeErr?: (text: string) => void
  /** In-box modules already evaluated (the startup snapshot); rows and commands naming them use these. */
  preloaded?: PreloadedModules
}

type McpModule = {
  mcpCommand(options: {
    args: readonly string[]
    patchFile: string
    writeOut(text: string): void
    writeErr(text: string): void
  }): Promise<number>
}

const LOG_LEVELS = new Set(['error', 'warn', 'info', 'debug'])

/** Runs the launcher and resolves with the process exit code. */
export async function launch(options: LaunchOptions): Promise<number> {
  const writeOut = options.writeOut ?? ((text: string) => void process.stdout.write(text))
  const writeErr = options.writeErr ?? ((text: string) => void process.stderr.write(text))
  const env = options.env ?? process.env
  const cwd = options.cwd ?? process.cwd()
  let request: LaunchRequest
  try {
    request = parseLauncherArgs(options.argv)
  } catch (error) {
    if (error instanceof UsageError) {
      writeErr(`dsh: ${error.message}\n`)
      return 1
    }
    throw error
  }
  if (request.kind === 'help') {
    writeOut(LAUNCHER_HELP)
    return 0
  }
  if (request.kind === 'version') {
    writeOut(`${options.version}\n`)
    return 0
  }
  const home = resolveHome(env)
  if (request.kind === 'plugin')
    return runPluginCommand({ home, profile: request.profile, pnpmArgs: request.pnpmArgs, cwd, writeErr })
  if (request.kind === 'sessions')
    return runSessionsCommand({
      args: request.args,
      home,
      cwd,
      installDir: options.installDir,
      preloaded: options.preloaded,
      writeOut,
      writeErr,
    })

  if (request.kind === 'mcp') {
    let patchFile = path.join(home, 'cordis.patch.yml')
    try {
      if (request.profile) patchFile = (await openProfile(home, request.profile, { create: true })).patchFile
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error
      writeErr(`dsh: ${error.message}\n`)
      return 1
    }
    const command = await loadInstalledModule<McpModule>('@dsh/mcp/command', 'mcp', { ...options, writeErr })
    return command ? command.mcpCommand({ args: request.args, patchFile, writeOut, writeErr }) : 1
  }

  const exit = new ExitRequest()
  const removeSignals = request.dump ? () => {} : installSignalHandlers(exit, writeErr)
  try {
    const profile = await openProfile(home, request.profile)
    const fixed = await readFixedLayers(profile, options.installDir, request.patches, cwd)
    const watchFiles = userPatchFiles(profile, home)
    const layersNow = async (): Promise<Layer[]> => [
      ...fixed.bundleLayers,
      ...(await readUserLayers(watchFiles)),
      ...fixed.overlayLayers,
    ]
    if (request.dump === 'default') {
      writeOut(renderComposed(compose(fixed.bundleLayers)))
      return 0
    }
    const composed = compose(await layersNow())
    if (request.dump === 'config') {
      writeOut(renderComposed(composed))
      return 0
    }
    const level = env.DSH_LOG_LEVEL?.trim() || 'warn'
    if (!LOG_LEVELS.has(level))
      throw new ConfigError(`DSH_LOG_LEVEL must be one of error, warn, info, debug, got "${level}"`)
    const settleText = env.DSH_STARTUP_TIMEOUT_MS?.trim() || '30000'
    const settle = Number(settleText)
    if (!/^\d+$/.test(settleText) || settle <= 0) {
      throw new ConfigError(`DSH_STARTUP_TIMEOUT_MS must be a positive number of milliseconds, got "${settleText}"`)
    }
    const { runTree } = await import('./runtime.ts')
    return await runTree({
      rows: composed.rows,
      appArgs: request.appArgs,
      profile: {
        name: profile.name,
        dir: profile.dir,
        watchFiles,
        recompose: async () => compose(await layersNow()).rows,
      },
      home,
      installDir: options.installDir,
      exit,
      logLevel: level as 'warn',
      settleTimeoutMs: settle,
      writeErr,
      preloaded: options.preloaded,
    })
  } catch (error) {
    if (error instanceof ConfigError) {
      writeErr(`dsh: ${error.message}\n`)
      return 1
    }
    throw error
  } finally {
    removeSignals()
  }
}
