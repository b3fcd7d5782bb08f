import { chmodSync, mkdtempSync, rmSync, writeFileSync, statSync, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Credentials, parseDotenv } from '../src/index.ts'

let dir: string
let root: Context
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dsh-cred-'))
  root = new Context()
  delete process.env.DSH_TEST_SECRET_KEY
})
afterEach(async () => {
  await root.fiber.dispose()
  rmSync(dir, { recursive: true, force: true })
})

const config = () => ({ file: path.join(dir, '.credentials.yaml'), envFile: path.join(dir, '.env') })

describe('credentials', () => {
  it('prefers the environment, then the credentials file, then the home .env', async () => {
    writeFileSync(path.join(dir, '.env'), 'DSH_TEST_SECRET_KEY="from-dotenv"\nOTHER=1 # comment\n')
    await root.plugin(Credentials, config())
    expect(root.credentials.lookup('DSH_TEST_SECRET_KEY')).toEqual({ value: 'from-dotenv', source: 'env-file' })
    await root.credentials.set('DSH_TEST_SECRET_KEY', 'from-file')
    expect(statSync(config().file).mode & 0o777).toBe(0o600)
    expect(root.credentials.lookup('DSH_TEST_SECRET_KEY')).toEqual({ value: 'from-file', source: 'file' })
    process.env.DSH_TEST_SECRET_KEY = 'from-env'
    expect(root.credentials.lookup('DSH_TEST_SECRET_KEY')).toEqual({ value: 'from-env', source: 'env' })
    expect(readFileSync(config().file, 'utf8')).toContain('DSH_TEST_SECRET_KEY: from-file')
  })

  it('refuses a credentials file other users can read, naming chmod 600', async () => {
    writeFileSync(config().file, 'version: 1\nrefs: { A: b }\n')
    chmodSync(config().file, 0o644)
    await expect(root.plugin(Credentials, config())).rejects.toThrow(`run: chmod 600 ${config().file}`)
  })

  it('refuses a malformed document with the file and the problem', async () => {
    writeFileSync(config().file, 'version: 1\nrefs: { A: 3 }\n', { mode: 0o600 })
    await expect(root.plugin(Credentials, config())).rejects.toThrow('.credentials.yaml: refs.A must be a non-empty string')
  })

  it('parses dotenv lines', () => {
    expect(parseDotenv("export A=1\nB='two words'\n# c\nC = x # note\nbad line\n")).toEqual({ A: '1', B: 'two words', C: 'x' })
  })
})
