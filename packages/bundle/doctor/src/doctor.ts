import { parseCmdline } from '@dsh/cmdline'
import type { Context } from '@dsh/cordis'
import type {} from '@dsh/loader'
import { errorMessage } from '@dsh/tools'
import { Command } from 'commander'
import {
  type Check,
  commandsCheck,
  credentialsCheck,
  hooksCheck,
  instructionsCheck,
  mcpCheck,
  modelCheck,
  nodeCheck,
  rowsCheck,
  sandboxCheck,
  skillsCheck,
  slirpCheck,
  trustCheck,
} from './checks.ts'

export const name = 'doctor'
export const inject = ['cmdlineArgs', 'appExit', 'loader']

const MARK: Record<Check['status'], string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' }

/** The report as people read it: one line per check, what was found indented below, the fix of a problem. */
export function renderReport(checks: readonly Check[], cwd: string): string {
  const lines = [`dsh doctor: ${cwd}`]
  for (const check of checks) {
    lines.push(`${MARK[check.status]} ${check.name}: ${check.summary}`)
    for (const item of check.found ?? []) lines.push(`       ${item}`)
    if (check.fix) lines.push(`       fix: ${check.fix}`)
  }
  const failed = checks.filter((check) => check.status === 'fail').map((check) => check.name)
  lines.push(failed.length ? `failed: ${failed.join(', ')}` : 'all checks passed')
  return `${lines.join('\n')}\n`
}

/**
 * `dsh doctor [--json]`: once the tree has settled, asks the live services what this folder and profile
 * would use (config files, credentials, model route, sandbox), prints the report and exits 1 when a check failed.
 */
export function apply(ctx: Context) {
  const program = new Command('dsh doctor')
    .description('Report the config, credentials, model route and sandbox dsh would use in this folder.')
    .option('--json', 'print the report as one JSON object')
  const options = parseCmdline(ctx, program, ({ options }) => ({ json: options.json === true }))
  if (!options) return
  const cwd = process.cwd()
  const run = async () => {
    await ctx.loader.settle()
    const checks: Check[] = [
      nodeCheck(),
      rowsCheck(ctx),
      modelCheck(ctx),
      credentialsCheck(ctx),
      trustCheck(ctx, cwd),
      instructionsCheck(ctx, cwd),
      skillsCheck(ctx, cwd),
      commandsCheck(ctx, cwd),
      hooksCheck(ctx, cwd),
      mcpCheck(ctx, cwd),
      await sandboxCheck(ctx, cwd),
      slirpCheck(ctx),
    ]
    const failed = checks.filter((check) => check.status === 'fail')
    process.stdout.write(
      options.json
        ? `${JSON.stringify({ ok: failed.length === 0, cwd, profile: ctx.get('profileContext')?.name, checks })}\n`
        : renderReport(checks, cwd),
    )
    ctx.appExit(failed.length ? 1 : 0)
  }
  run().catch((error) => {
    process.stderr.write(`dsh doctor: ${errorMessage(error)}\n`)
    ctx.appExit(1)
  })
}
