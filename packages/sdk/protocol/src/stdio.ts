import { Writable } from 'node:stream'

/** The process's stdin and stdout as a protocol's streams. */
export interface ProtocolStdio {
  /** Where requests arrive (stdin). */
  input: NodeJS.ReadableStream
  /** Where answers and notifications go (stdout). */
  output: NodeJS.WritableStream
  /** Gives `process.stdout` back and stops reading stdin. */
  release(): void
}

/**
 * stdin and stdout for a protocol spoken over them. With `guard`, other
 * writes to `process.stdout` (a stray console.log) go to stderr until
 * `release()`, so stdout carries protocol frames only. A write error on
 * stdout (EPIPE once the client is gone) does not crash the process: the
 * output stream reports it and stops writing.
 */
export function protocolStdio(guard: boolean): ProtocolStdio {
  const stdout = process.stdout
  const raw = stdout.write
  const ignore = () => {}
  stdout.on('error', ignore)
  const output = new Writable({
    decodeStrings: false,
    write(chunk, encoding, callback) {
      raw.call(stdout, chunk, encoding, callback)
    },
  })
  if (guard)
    stdout.write = ((...args: Parameters<typeof stdout.write>) =>
      process.stderr.write(...(args as [string]))) as typeof stdout.write
  return {
    input: process.stdin,
    output,
    release() {
      if (guard) stdout.write = raw
      stdout.off('error', ignore)
      process.stdin.pause()
    },
  }
}
