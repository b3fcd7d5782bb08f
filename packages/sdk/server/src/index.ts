import type {} from '@dsh/cmdline'
import type {} from '@dsh/conversations'
import type { Context } from '@dsh/cordis'
import { protocolStdio } from '@dsh/sdk-protocol'
import { Config, type SdkServerConfig } from './config.ts'
import { SdkServer, type SdkStreams } from './server.ts'

export { Config, type SdkServerConfig }
export { SdkServer, type SdkStreams }

export const name = 'sdk-server'
export const inject = ['agents', 'sessions', 'conversations', 'appExit']

/**
 * Serves the SDK protocol on stdin and stdout: JSON-RPC 2.0, one JSON object
 * per line. End of input or a `shutdown` request cancels running turns,
 * saves the sessions and exits 0.
 */
export function apply(ctx: Context, config: SdkServerConfig) {
  const io = protocolStdio(config.guardStdout)
  ctx.effect(() => () => io.release(), 'sdk stdio')
  new SdkServer(ctx, config, io, () => ctx.appExit(0))
}
