import { describe, expect, it } from 'vitest'
import { retryDelay } from '../src/index.ts'

const policy = {
  maxRetries: 3,
  initialDelayMs: 500,
  maxDelayMs: 4000,
  jitterRatio: 0.1,
  retryableCodes: ['SERVER', 'RATE_LIMIT'] as const,
}

describe('retryDelay', () => {
  it('doubles from the initial delay up to the cap, with jitter inside the ratio', () => {
    expect([1, 2, 3].map((n) => retryDelay({ ...policy, jitterRatio: 0 }, n, 'SERVER', undefined))).toEqual([
      500, 1000, 2000,
    ])
    expect(retryDelay({ ...policy, maxRetries: 9, jitterRatio: 0 }, 6, 'SERVER', undefined)).toBe(4000)
    expect(retryDelay(policy, 1, 'SERVER', undefined, () => 1)).toBe(550)
    expect(retryDelay(policy, 1, 'SERVER', undefined, () => 0)).toBe(450)
  })

  it('honours Retry-After within the cap and gives up beyond it', () => {
    expect(retryDelay(policy, 1, 'RATE_LIMIT', 1200)).toBe(1200)
    expect(retryDelay(policy, 1, 'RATE_LIMIT', 60_000)).toBeUndefined()
  })

  it('gives up on codes that are not retryable and after maxRetries', () => {
    expect(retryDelay(policy, 1, 'AUTH', undefined)).toBeUndefined()
    expect(retryDelay(policy, 4, 'SERVER', undefined)).toBeUndefined()
  })
})
