import { describe, expect, it } from 'vitest'
import { ExitRequest } from '../src/shutdown.ts'

describe('ExitRequest', () => {
  it('takes the first code, and resolves with it', async () => {
    const exit = new ExitRequest()
    expect(exit.requested).toBe(false)
    exit.request(3)
    exit.request(5)
    expect(exit.code).toBe(3)
    expect(await exit.promise).toBe(3)
  })

  it("lets an app's non-zero code replace SIGTERM's 0, and nothing else", () => {
    const term = new ExitRequest()
    term.request(0, 'signal')
    term.request(1)
    expect(term.code).toBe(1)
    term.request(2)
    expect(term.code).toBe(1)

    const interrupted = new ExitRequest()
    interrupted.request(130, 'signal')
    interrupted.request(1)
    expect(interrupted.code).toBe(130)

    const finished = new ExitRequest()
    finished.request(0)
    finished.request(1)
    expect(finished.code).toBe(0)
  })
})
