import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { CmdlineArgs } from '@dsh/cmdline'
import { Context, emitIsolated } from '@dsh/cordis'
import { errorText, exportLogsToConsole, type Health, Loader, type LogLevel, type Row } from '@dsh/loader'
import { readDshEnv } from './env.ts'
import { createModuleImporter, type PreloadedModules } from './modules.ts'
import type { ProfileContext } from './profile-context.ts'
import { DRAIN_LIMIT_MS, type ExitRequest } from './shutdown.ts'

export interface TreeOptions {
  rows: Row[]
  appArgs: string[]
  profile: Omit<ProfileContext, 'home'>
  home: string
  installDir: string
  exit: ExitRequest
  logLevel: LogLevel
  settleTimeoutMs: number
  writeErr: (text: string) => void
  preloaded?: PreloadedModules
}

/**
 * Boots the composed rows as a cordis tree, then waits for an exit request
 * (`ctx.appExit` or a signal) and drains the tree. Resolves with the exit code.
 */
export async function runTree(options: TreeOptions): Promise<number> {
  const { exit, writeErr } = options
  const root = new Context()
  exportLogsToConsole(root, options.logLevel, writeErr)
  root.provide('cmdlineArgs', new CmdlineArgs(options.appArgs))
  root.provide('appExit', (code: number) => exit.request(code))
  root.provide('profileContext', { ...options.profile, home: options.home })
  const dshHomePath = (...segments: string[]) => path.join(options.home, ...segments)
  await root.plugin(Loader, {
    importModule: createModuleImporter({
      home: options.home,
      profileDir: options.profile.dir,
      installDir: options.installDir,
      preloaded: options.preloaded,
    }),
    scope: { dshHomePath, dshEnv: readDshEnv() },
  })

  let code: number
  try {
    await root.loader.apply(options.rows)
    const health = await Promise.race([root.loader.settle(options.settleTimeoutMs), exit.promise.then(() => null)])
    if (health && !exit.requested && (health.failed.length || health.pending.length)) {
      await reportStartupFailure(health, options.home, writeErr)
      code = 1
    } else {
      if (!exit.requested) root.logger('dsh').info(`profile ${options.profile.name} started`)
      // The tree runs until an app asks to exit or a signal arrives, even when no plugin holds the event loop open.
      const keepAlive = setInterval(() => {}, 2 ** 30)
      code = await exit.promise
      clearInterval(keepAlive)
    }
  } catch (error) {
    writeErr(`dsh: ${errorText(error)}\n`)
    code = 1
  }
  await drain(root, writeErr)
  // An app may have asked for another code while the tree drained (see ExitRequest).
  return code === 0 && exit.code !== undefined ? exit.code : code
}

async function drain(root: Context, writeErr: (text: string) => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), DRAIN_LIMIT_MS)
    timer.unref()
  })
  const stop = async () => {
    await emitIsolated(root, 'app/shutdown')
    await root.fiber.dispose()
    return 'done' as const
  }
  const result = await Promise.race([stop(), limit])
  clearTimeout(timer)
  if (result === 'timeout')
    writeErr(`dsh: the plugin tree did not stop within ${DRAIN_LIMIT_MS / 1000} s; exiting anyway\n`)
}

async function reportStartupFailure(health: Health, home: string, writeErr: (text: string) => void): Promise<void> {
  const lines = ['dsh: startup failed']
  for (const { id, message } of health.failed) lines.push(`  row "${id}" failed: ${message}`)
  for (const { id, message } of health.pending) lines.push(`  row "${id}" did not start: ${message}`)
  const report = `${lines.join('\n')}\n`
  writeErr(report)
  try {
    const dir = path.join(home, 'logs')
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const file = path.join(dir, `startup-${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.log`)
    await writeFile(file, report, { mode: 0o600 })
    writeErr(`dsh: full diagnostics: ${file}\n`)
  } catch (error) {
    writeErr(`dsh: could not write the startup log: ${errorText(error)}\n`)
  }
}
