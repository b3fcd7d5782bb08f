import { Schema } from '@dsh/cordis'

export interface SdkServerConfig {
  maxPromptBytes: number
  maxLineBytes: number
  listLimit: number
  maxListLimit: number
  settleTimeoutMs: number
  drainTimeoutMs: number
  guardStdout: boolean
}

export const Config: Schema<Partial<SdkServerConfig>, SdkServerConfig> = Schema.object({
  maxPromptBytes: Schema.natural()
    .min(1)
    .default(4 * 1024 * 1024)
    .description(
      'Largest prompt `session/prompt` accepts: UTF-8 bytes of text plus base64 characters of images. A larger one is refused with -32602 naming `content`.',
    ),
  maxLineBytes: Schema.natural()
    .min(1024)
    .default(64 * 1024 * 1024)
    .description(
      'Longest line read from stdin; a longer one is dropped and answered with -32600. Keep it above `maxPromptBytes`.',
    ),
  listLimit: Schema.natural()
    .min(1)
    .default(50)
    .description('Sessions `session/list` returns when the call gives no `limit`.'),
  maxListLimit: Schema.natural()
    .min(1)
    .default(500)
    .description('The largest `limit` a `session/list` call may ask for.'),
  settleTimeoutMs: Schema.natural()
    .default(30_000)
    .description(
      'How long `initialize` waits for the plugin tree to finish starting before it answers, in milliseconds.',
    ),
  drainTimeoutMs: Schema.natural()
    .default(3_000)
    .description(
      'On shutdown or end of input: how long to wait for cancelled prompts to settle before the sessions are closed, in milliseconds.',
    ),
  guardStdout: Schema.boolean()
    .default(true)
    .description(
      'Send anything else written to stdout (a stray console.log) to stderr, so stdout carries protocol frames only.',
    ),
})
