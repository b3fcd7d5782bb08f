import { Writable } from 'node:stream'
import type {} from '@dsh/conversations'
import type {} from '@dsh/cmdline'
import type { Context } from '@dsh/cordis'
import { Config, type SdkServerConfig } from './config.ts'
import { SdkServer, type SdkStreams } from './server.ts'

export { Config, type SdkServerConfig }
export { SdkServer, type SdkStreams }

export const name = 'sdk-server'
export const inject = ['agents', 'sessions', 'conversations', 'appExit']

/**
 * stdin and stdout for the protocol. With `guard`, other writes to
 * `process.stdout` (a stray console.log) go to stderr until `release()`.
 */
function stdio(guard: boolean): SdkStreams & { release(): void } {
  const stdout = process.stdout
  const raw = stdout.write
  // EPIPE once the client is gone: the protocol stream reports it and stops writing.
  const ignore = () => {}
  stdout.on('error', ignore)
  const output = new Writable({
    decodeStrings: false,
    write(chunk, encoding, callback) {
      raw.call(stdout, chunk, encoding, callback)
    },
  })
  if (guard)
    stdout.write = ((...args: Parameters<typeof stdout.write>) =>
      process.stderr.write(...(args as [string]))) as typeof stdout.write
  return {
    input: process.stdin,
    output,
    release() {
      if (guard) stdout.write = raw
      stdout.off('error', ignore)
      process.stdin.pause()
    },
  }
}

/**
 * Serves the SDK protocol on stdin and stdout: JSON-RPC 2.0, one JSON object
 * per line. End of input or a `shutdown` request cancels running turns,
 * saves the sessions and exits 0.
 */
export function apply(ctx: Context, config: SdkServerConfig) {
  const io = stdio(config.guardStdout)
  ctx.effect(() => () => io.release(), 'sdk stdio')
  new SdkServer(ctx, config, io, () => ctx.appExit(0))
}
