/**
 * The exit request shared by signals and `ctx.appExit`: the first request
 * wins and starts a graceful drain. One exception: after SIGTERM (code 0),
 * an app that asks for a non-zero code while the tree drains gets it, so a
 * one-shot task the signal cut short does not exit as if it had completed.
 */
export class ExitRequest {
  code: number | undefined
  readonly promise: Promise<number>
  private resolveCode!: (code: number) => void
  private bySignal = false

  constructor() {
    this.promise = new Promise((resolve) => {
      this.resolveCode = resolve
    })
  }

  request(code: number, from: 'app' | 'signal' = 'app'): void {
    if (this.code !== undefined) {
      if (this.bySignal && this.code === 0 && code !== 0 && from === 'app') this.code = code
      return
    }
    this.code = code
    this.bySignal = from === 'signal'
    this.resolveCode(code)
  }

  get requested(): boolean {
    return this.code !== undefined
  }
}

export const DRAIN_LIMIT_MS = 5_000

/** Installs SIGINT (130) and SIGTERM (0) handlers; a second signal exits at once. */
export function installSignalHandlers(exit: ExitRequest, writeErr: (line: string) => void): () => void {
  const onSignal = (signal: NodeJS.Signals) => {
    const code = signal === 'SIGINT' ? 130 : 0
    if (exit.requested) {
      writeErr(`dsh: ${signal} again, exiting now\n`)
      process.exit(exit.code ?? code)
    }
    exit.request(code, 'signal')
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return () => {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}
