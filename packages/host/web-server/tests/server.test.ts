import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import * as webServer from '../src/index.ts'
import type { WebServerConfig } from '../src/index.ts'

let dist: string
let root: Context | undefined

beforeAll(async () => {
  dist = await mkdtemp(path.join(os.tmpdir(), 'dsh-web-server-'))
  await writeFile(path.join(dist, 'index.html'), '<!doctype html><title>app</title>')
})

afterAll(() => rm(dist, { recursive: true, force: true }))
afterEach(() => root?.fiber.dispose())

async function start(config: Partial<WebServerConfig> = {}): Promise<Context> {
  root = new Context()
  await root.plugin(webServer, {
    host: '127.0.0.1',
    port: 0,
    trustedHosts: [],
    openBrowser: false,
    maxBodyBytes: 4096,
    settleTimeoutMs: 0,
    staticDir: dist,
    ...config,
  })
  return root
}

describe('web-server', () => {
  it('provides ctx.webServer, serving the app from staticDir', async () => {
    const ctx = await start()
    const res = await fetch(`http://127.0.0.1:${ctx.webServer.port}/sessions/abc`)
    expect(await res.text()).toContain('<title>app</title>')
    expect(ctx.webServer.staticDir).toBe(dist)
  })

  it('prints the URL once listening, and does not open a browser in an SSH session', async () => {
    const written: string[] = []
    const capture = (chunk: unknown) => {
      written.push(String(chunk))
      return true
    }
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture)
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture)
    vi.stubEnv('SSH_CONNECTION', '10.0.0.1 50000 10.0.0.2 22')
    try {
      const ctx = await start({ openBrowser: true })
      await vi.waitFor(() => expect(written.join('')).toContain('SSH session detected, not opening a browser'))
      expect(written).toContain(`dsh web: http://127.0.0.1:${ctx.webServer.port}\n`)
    } finally {
      vi.unstubAllEnvs()
      out.mockRestore()
      err.mockRestore()
    }
  })
})
