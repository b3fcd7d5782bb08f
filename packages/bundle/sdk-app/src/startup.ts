import { parseCmdline } from '@dsh/cmdline'
import { type Context, Schema } from '@dsh/cordis'
import { Command } from 'commander'

declare module '@dsh/cordis' {
  interface Context {
    sdkAppStartup: SdkAppStartup
  }
}

export interface SdkAppStartup {
  profile: 'sdk' | 'sdk-minimal'
}

export const name = 'sdk-app-startup'
export const inject = ['cmdlineArgs', 'appExit']
export const Config: Schema<SdkAppStartup> = Schema.object({
  profile: Schema.union(['sdk', 'sdk-minimal'] as const).default('sdk'),
})

/** The SDK takes no arguments: stdin and stdout carry JSON-RPC. Provides `sdkAppStartup`. */
export function apply(ctx: Context, config: SdkAppStartup) {
  const program = new Command(`dsh --profile ${config.profile}`).description(
    'Serve the dsh SDK: JSON-RPC 2.0 over stdio, one JSON object per line. Logs go to stderr.',
  )
  const startup = parseCmdline(ctx, program, () => ({ profile: config.profile }))
  if (startup) ctx.provide('sdkAppStartup', startup)
}
