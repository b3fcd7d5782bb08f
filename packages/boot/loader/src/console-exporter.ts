import { format } from 'node:util'
import type { Context } from '@dsh/cordis'

const LEVELS = { error: 0, warn: 1, info: 2, debug: 3 } as const
export type LogLevel = keyof typeof LEVELS

/**
 * Sends the cordis logger to a stream (stderr by default), so plugin errors
 * are never silent. Messages above `level` are dropped.
 */
export function exportLogsToConsole(
  ctx: Context,
  level: LogLevel = 'warn',
  write: (line: string) => void = (line) => process.stderr.write(line),
): () => Promise<void> {
  const max = LEVELS[level]
  return ctx.logger.exporter({
    export(message) {
      const rank = LEVELS[message.type as LogLevel] ?? LEVELS.info
      if (rank > max) return
      const args = message.args.map((arg: unknown) => (arg instanceof Error ? (arg.stack ?? arg.message) : arg))
      write(`dsh: [${message.type}] ${message.name}: ${format(...args)}\n`)
    },
  })
}
