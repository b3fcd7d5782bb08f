import { Schema } from '@dsh/cordis'

export interface TerminalToolsConfig {
  idleMs: number
  startupTimeoutMs: number
  defaultTimeoutMs: number
  readLines: number
  maxReadLines: number
  maxOutputChars: number
}

export const Config: Schema<TerminalToolsConfig> = Schema.object({
  idleMs: Schema.natural()
    .min(1)
    .default(1_000)
    .description(
      'Output counts as settled after this many milliseconds without any (terminal_open, terminal_send, terminal_signal).',
    ),
  startupTimeoutMs: Schema.natural()
    .min(1)
    .default(10_000)
    .description('How long terminal_open waits for the first output to settle.'),
  defaultTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('How long terminal_send waits for the output to settle before it answers anyway.'),
  readLines: Schema.natural()
    .min(1)
    .default(500)
    .description('Lines one terminal_read returns when the call gives no count.'),
  maxReadLines: Schema.natural().min(1).default(5_000).description('The largest count a terminal_read may ask for.'),
  maxOutputChars: Schema.natural()
    .min(1)
    .default(16_000)
    .description('Characters of output one result shows (the newest); older ones are left out with a note.'),
})
