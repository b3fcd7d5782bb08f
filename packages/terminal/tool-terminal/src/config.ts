import { Schema } from '@dsh/cordis'

export interface TerminalToolsConfig {
  idleMs: number
  startupTimeoutMs: number
  defaultTimeoutMs: number
  maxTimeoutMs: number
  maxOutputChars: number
}

export const Config: Schema<TerminalToolsConfig> = Schema.object({
  idleMs: Schema.natural()
    .min(1)
    .default(1_000)
    .description(
      'Output counts as settled after this many milliseconds without any (terminal_create, terminal_send without wait_for, terminal_read with wait_ms).',
    ),
  startupTimeoutMs: Schema.natural()
    .min(1)
    .default(10_000)
    .description('How long terminal_create waits for the first output to settle.'),
  defaultTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('How long terminal_send waits when the call gives no timeout_ms.'),
  maxTimeoutMs: Schema.natural()
    .min(1)
    .default(600_000)
    .description('The longest timeout_ms or wait_ms a call may ask for.'),
  maxOutputChars: Schema.natural()
    .min(1)
    .default(16_000)
    .description('Characters of output one result shows (the newest); older ones are left out with a note.'),
})
