import { createServer } from 'node:http'

/** A plain HTTP server standing in for a host the sandbox's network settings must let through or keep out. */
export interface HttpTestHost {
  port: number
  /** `<Host header><path>` of every request it received, in order. */
  hits: string[]
  close(): Promise<void>
}

/** Starts a server on `address` (a loopback address) that answers every request with `answer`. */
export async function startHttpTestHost(address: string, answer: string): Promise<HttpTestHost> {
  const hits: string[] = []
  const server = createServer((request, response) => {
    hits.push(`${request.headers.host}${request.url}`)
    response.end(answer)
  })
  await new Promise<void>((resolve) => server.listen(0, address, resolve))
  return {
    port: (server.address() as { port: number }).port,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
