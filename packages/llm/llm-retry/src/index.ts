import type {} from '@dsh/agent'
import { type Context, Schema, stringList } from '@dsh/cordis'
import type { LlmErrorCode, RetryPolicy } from '@dsh/llm'

type Policy = Omit<RetryPolicy, 'retryableCodes'> & { retryableCodes: readonly string[] }

export const name = 'llm-retry'
export const inject = ['llm']

export interface RetryConfig extends Omit<RetryPolicy, 'retryableCodes'> {
  retryableCodes: string[]
}

export const Config: Schema<RetryConfig> = Schema.object({
  maxRetries: Schema.natural().default(5).description('Retries of one step before the turn ends with the error.'),
  initialDelayMs: Schema.natural().default(500).description('The first backoff; it doubles on each retry.'),
  maxDelayMs: Schema.natural()
    .default(10_000)
    .description('The longest wait; a longer Retry-After from the provider gives up.'),
  jitterRatio: Schema.number()
    .min(0)
    .max(1)
    .default(0.1)
    .description('Random spread around each backoff, as a share of it.'),
  retryableCodes: stringList('Failure codes worth another attempt.', [
    'RATE_LIMIT',
    'SERVER',
    'TIMEOUT',
    'TRANSPORT',
    'EMPTY_RESPONSE',
  ]),
})

/** The wait before retry number `retry` (1-based), or undefined to give up. */
export function retryDelay(
  policy: Policy,
  retry: number,
  code: LlmErrorCode,
  retryAfterMs: number | undefined,
  random = Math.random,
): number | undefined {
  if (!policy.retryableCodes.includes(code) || retry > policy.maxRetries) return undefined
  if (retryAfterMs !== undefined) return retryAfterMs <= policy.maxDelayMs ? retryAfterMs : undefined
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (retry - 1))
  const spread = base * policy.jitterRatio * (random() * 2 - 1)
  return Math.max(0, Math.round(base + spread))
}

/**
 * Retries a failed model call with exponential backoff and jitter, honouring
 * the provider's Retry-After. The route's own policy wins over this config.
 * The loop logs each retry (`llm/retry`) and waits, cancellably.
 */
export function apply(ctx: Context, config: RetryConfig) {
  ctx.on('agent/request-error', async (_agent, info, next) => {
    const policy = ctx.llm.retryPolicy(info.provider) ?? config
    const delayMs = retryDelay(policy, info.attempt, info.failure.code, info.failure.retryAfterMs)
    if (delayMs !== undefined) return { kind: 'retry', delayMs }
    return next()
  })
}
