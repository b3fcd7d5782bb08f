import { parseCmdline } from '@dsh/cmdline'
import type { Context } from '@dsh/cordis'
import { DEFAULT_PORT } from '@dsh/web-server'
import { Command, InvalidArgumentError } from 'commander'

declare module '@dsh/cordis' {
  interface Context {
    webStartup: WebStartup
  }
}

export interface WebStartup {
  openBrowser: boolean
  host?: string
  port?: number
  trustedHosts: string[]
}

export const name = 'web-startup'
export const inject = ['cmdlineArgs', 'appExit']

function parsePort(value: string): number {
  const port = Number(value)
  if (!/^\d+$/.test(value) || port > 65535)
    throw new InvalidArgumentError('--port must be a number from 0 to 65535 (0 picks a free port)')
  return port
}

function parseHost(value: string): string {
  if (!/^[A-Za-z0-9.:[\]-]+$/.test(value))
    throw new InvalidArgumentError(`--host must be a host name or IP address, got "${value}"`)
  return value
}

/** Parses `dsh web` options and provides `webStartup`. */
export function apply(ctx: Context) {
  const program = new Command('dsh web')
    .description('Serve the dsh browser app on this machine.')
    .option('--host <host>', 'address to bind (default 127.0.0.1)', parseHost)
    .option('--port <port>', `port to listen on; 0 picks a free one (default ${DEFAULT_PORT})`, parsePort)
    .option(
      '--trusted-host <authority>',
      'extra host or host:port the API accepts (repeatable)',
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .option('--no-open', 'do not open a browser')
  const startup = parseCmdline(ctx, program, ({ options }): WebStartup => {
    const value: WebStartup = { openBrowser: options.open !== false, trustedHosts: options.trustedHost as string[] }
    if (options.host !== undefined) value.host = options.host as string
    if (options.port !== undefined) value.port = options.port as number
    return value
  })
  if (startup) ctx.provide('webStartup', startup)
}
