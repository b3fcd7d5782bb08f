import { parseCmdline } from '@dsh/cmdline'
import type { Context } from '@dsh/cordis'
import { Command } from 'commander'

declare module '@dsh/cordis' {
  interface Context {
    acpAppStartup: AcpAppStartup
  }
}

export type AcpAppStartup = Record<string, never>

export const name = 'acp-app-startup'
export const inject = ['cmdlineArgs', 'appExit']

/** The ACP server takes no arguments: stdin and stdout carry the Agent Client Protocol. Provides `acpAppStartup`. */
export function apply(ctx: Context) {
  const program = new Command('dsh --profile acp').description(
    'Serve the Agent Client Protocol over stdio, for editors and automation.',
  )
  const startup = parseCmdline(ctx, program, (): AcpAppStartup => ({}))
  if (startup) ctx.provide('acpAppStartup', startup)
}
