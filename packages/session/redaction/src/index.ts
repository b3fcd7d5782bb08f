import { type Context, Schema, stringList } from '@dsh/cordis'
import type {} from '@dsh/credentials'
import type {} from '@dsh/llm'
import type {} from '@dsh/session'
import { type NamedSecret, redactable, redactStream, redactText } from './redact.ts'

export { type NamedSecret, placeholder, redactable, redactStream, redactText } from './redact.ts'

export const name = 'redaction'
export const inject = ['sessions']

export interface RedactionConfig {
  minLength: number
  env: string[]
}

export const Config: Schema<RedactionConfig> = Schema.object({
  minLength: Schema.natural()
    .min(1)
    .default(8)
    .description('Shorter credential values are not redacted: they would hit common words.'),
  env: stringList(
    'Environment variables whose values are secrets even without ctx.credentials (sdk-minimal reads its key from the environment).',
    ['DEEPSEEK_API_KEY'],
  ),
})

/**
 * Keeps every loaded credential out of the session log, and so out of the
 * catalog, every surface and the model's requests (a projection of the log):
 * a session text filter redacts each event before it is logged, and an
 * `llm/stream` listener redacts the model's deltas before the loop assembles
 * them, so the live deltas, the logged reply and the tool calls it makes
 * all carry `[redacted: NAME]`.
 */
export function apply(ctx: Context, config: RedactionConfig) {
  const secrets = (): NamedSecret[] => {
    const found: NamedSecret[] = []
    for (const name of config.env) {
      const value = process.env[name]?.trim()
      if (value) found.push({ name, value })
    }
    const credentials = ctx.get('credentials')
    if (credentials) found.push(...credentials.secrets())
    return redactable(found, config.minLength)
  }

  ctx.sessions.registerTextFilter(ctx, 'redaction', () => {
    const list = secrets()
    return list.length ? (text) => redactText(text, list) : undefined
  })

  ctx.on('llm/stream', (_request, next) => {
    const list = secrets()
    return list.length ? redactStream(next(), list) : next()
  })
}
