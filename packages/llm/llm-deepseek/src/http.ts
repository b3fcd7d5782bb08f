import { createRequire } from 'node:module'
import type { Agent as UndiciAgent, Dispatcher } from 'undici'

// undici's index evaluates about fifty modules the adapter never uses (fetch,
// websocket, cookies, cache and mock interceptors): about 100 ms of every cold
// start. The adapter needs the keep-alive Agent and the request API only, so
// it loads those two and attaches the API to Dispatcher the way the index
// does. undici is pinned exactly, and the adapter tests exercise this path.
const require = createRequire(import.meta.url)
const AgentClass = require('undici/lib/dispatcher/agent.js') as typeof UndiciAgent
const DispatcherClass = require('undici/lib/dispatcher/dispatcher.js') as { prototype: object }
if (!('request' in DispatcherClass.prototype))
  Object.assign(DispatcherClass.prototype, require('undici/lib/api/index.js'))

export type { Dispatcher }
export const Agent = AgentClass

export interface PostOptions {
  headers: Record<string, string>
  body: string
  signal: AbortSignal
}

/** POSTs `body` to `url` through `agent`; resolves once the response headers arrive. */
export function post(agent: UndiciAgent, url: string | URL, options: PostOptions): Promise<Dispatcher.ResponseData> {
  const target = new URL(url)
  return agent.request({
    origin: target.origin,
    path: `${target.pathname}${target.search}`,
    method: 'POST',
    headers: options.headers,
    body: options.body,
    signal: options.signal,
  })
}
