import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, fstatSync, openSync, statSync } from 'node:fs'
import type { Server } from 'node:net'

/**
 * A network namespace of dsh's own: made by a short-lived helper process under
 * bwrap, kept alive by a descriptor dsh holds, and joined by commands through
 * `nsenter --net=<path>`. When asked, the helper also binds a listening socket
 * on the namespace's loopback and hands it to dsh, so that the proxy listens
 * inside the namespace while running in dsh's own process.
 */
export interface NetworkNamespace {
  /** A path that names the namespace as long as dsh runs (`/proc/<dsh>/fd/<n>`). */
  path: string
  /**
   * When dsh is not root: the user namespace that owns the network namespace,
   * which a process must enter first (`nsenter --user=`) to join it.
   */
  userPath?: string
  /** The listening socket on the namespace's 127.0.0.1, when a port was asked for. */
  listener?: Server
  /** Lets go of the namespace (and the listening socket). */
  close(): void
}

export interface NamespaceOptions {
  bwrap: string
  /** Bind this port on the namespace's loopback and hand over the listening socket. */
  listenPort?: number
  timeoutMs: number
}

// The helper: listen on the namespace's loopback if asked, hand the socket to
// dsh over the IPC channel, then wait for dsh to hold the namespace and exit.
const HELPER = `
const net = require('node:net')
const port = Number(process.argv[1])
const ready = (server) => process.send({ pid: process.pid }, server)
process.on('message', (message) => { if (message === 'done') process.disconnect() })
if (port > 0) {
  const server = net.createServer()
  server.on('error', (error) => { process.send({ error: error.message }); process.disconnect() })
  server.listen(port, '127.0.0.1', () => ready(server))
  process.on('disconnect', () => server.close())
} else ready(undefined)
`

/** Makes a fresh network namespace (only loopback, up) and returns a handle on it. */
export function openNamespace(options: NamespaceOptions): Promise<NetworkNamespace> {
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0
  const args = [
    ...(asRoot ? [] : ['--unshare-user']),
    '--dev-bind',
    '/',
    '/',
    '--unshare-net',
    '--die-with-parent',
    '--',
    process.execPath,
    '-e',
    HELPER,
    String(options.listenPort ?? 0),
  ]
  return new Promise((resolve, reject) => {
    let child: ChildProcess
    try {
      child = spawn(options.bwrap, args, {
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      })
    } catch (error) {
      reject(error)
      return
    }
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8')
    })
    const timer = setTimeout(
      () => fail(`the namespace helper did not answer within ${options.timeoutMs}ms`),
      options.timeoutMs,
    )
    let settled = false
    const fail = (why: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(new Error(why))
    }
    child.on('error', (error) => fail(`the namespace helper could not start: ${error.message}`))
    child.on('exit', (code) =>
      fail(`the namespace helper exited (${code ?? 'signal'}) before it was ready: ${stderr.trim() || 'no message'}`),
    )
    child.on('message', (message: { pid?: number; error?: string }, handle?: Server) => {
      if (settled) return
      if (message.error || typeof message.pid !== 'number')
        return fail(`the namespace helper failed: ${message.error ?? 'no pid'}`)
      let fd: number
      let userFd: number | undefined
      try {
        fd = openSync(`/proc/${message.pid}/ns/net`, 'r')
        if (!asRoot) userFd = openSync(`/proc/${message.pid}/ns/user`, 'r')
      } catch (error) {
        return fail(`the new namespace could not be opened: ${(error as Error).message}`)
      }
      // Never hand out the host's own namespace as a confined one.
      if (fstatSync(fd).ino === statSync('/proc/self/ns/net').ino) {
        closeSync(fd)
        return fail('the helper did not get a network namespace of its own')
      }
      settled = true
      clearTimeout(timer)
      child.send('done')
      resolve({
        path: `/proc/${process.pid}/fd/${fd}`,
        ...(userFd === undefined ? {} : { userPath: `/proc/${process.pid}/fd/${userFd}` }),
        ...(handle ? { listener: handle } : {}),
        close: () => {
          handle?.close()
          closeSync(fd)
          if (userFd !== undefined) closeSync(userFd)
        },
      })
    })
  })
}
