/**
 * The exit request shared by signals and `ctx.appExit`: the first request
 * wins and starts a graceful drain; `force` is for a second Ctrl+C.
 */
export class ExitRequest {
  code: number | undefined
  readonly promise: Promise<number>
  private resolveCode!: (code: number) => void

  constructor() {
    this.promise = new Promise((resolve) => {
      this.resolveCode = resolve
    })
  }

  request(code: number): void {
    if (this.code !== undefined) return
    this.code = code
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
    exit.request(code)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return () => {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}
