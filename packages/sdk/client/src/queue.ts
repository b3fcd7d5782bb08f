/**
 * An async iterator fed by `push`: values wait until read, reads wait until
 * a value comes, and `end()` finishes it once what was pushed is read.
 */
export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  private readonly values: T[] = []
  private readonly readers: Array<(result: IteratorResult<T>) => void> = []
  private ended = false

  constructor(private readonly onReturn: () => void = () => {}) {}

  push(value: T): void {
    if (this.ended) return
    const reader = this.readers.shift()
    if (reader) reader({ value, done: false })
    else this.values.push(value)
  }

  end(): void {
    if (this.ended) return
    this.ended = true
    for (const reader of this.readers.splice(0)) reader({ value: undefined, done: true })
  }

  next(): Promise<IteratorResult<T>> {
    if (this.values.length > 0) return Promise.resolve({ value: this.values.shift() as T, done: false })
    if (this.ended) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve) => this.readers.push(resolve))
  }

  /** Stops reading (a `break` out of `for await`): later values are dropped. */
  return(): Promise<IteratorResult<T>> {
    this.values.length = 0
    this.end()
    this.onReturn()
    return Promise.resolve({ value: undefined, done: true })
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this
  }
}
