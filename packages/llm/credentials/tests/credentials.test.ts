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

  it('knows a saved or edited secret from the next look on (files are looked at once per tick)', async () => {
    await root.plugin(Credentials, config())
    expect(root.credentials.secrets()).toEqual([])
    await root.credentials.set('SAVED_TOKEN', 'tok-saved-1234')
    expect(root.credentials.secrets()).toEqual([{ name: 'SAVED_TOKEN', value: 'tok-saved-1234' }])
    writeFileSync(config().envFile, 'EDITED_TOKEN=tok-edited-5678\n')
    await Promise.resolve()
    expect(root.credentials.secrets()).toContainEqual({ name: 'EDITED_TOKEN', value: 'tok-edited-5678' })
  })

  it('refuses a credentials file other users can read, naming chmod 600', async () => {
    writeFileSync(config().file, 'version: 1\nrefs: { A: b }\n')
    chmodSync(config().file, 0o644)
    await expect(root.plugin(Credentials, config())).rejects.toThrow(`run: chmod 600 ${config().file}`)
  })

  it('refuses a malformed document with the file and the problem', async () => {
    writeFileSync(config().file, 'version: 1\nrefs: { A: 3 }\n', { mode: 0o600 })
    await expect(root.plugin(Credentials, config())).rejects.toThrow(
      '.credentials.yaml: refs.A must be a non-empty string',
    )
  })

  it('lists every loaded credential for redaction: file and .env entries, names found in the environment, not plain ones', async () => {
    writeFileSync(
      config().file,
      'version: 1\nrefs: { DEEPSEEK_API_KEY: sk-from-file, DEEPSEEK_BASE_URL: http://h }\n',
      { mode: 0o600 },
    )
    writeFileSync(config().envFile, 'OTHER_TOKEN=tok-dotenv\n')
    await root.plugin(Credentials, { ...config(), plain: ['DEEPSEEK_BASE_URL'] })
    const names = () => root.credentials.secrets().map((s) => `${s.name}=${s.value}`)
    expect(names()).toEqual(['DEEPSEEK_API_KEY=sk-from-file', 'OTHER_TOKEN=tok-dotenv'])
    // An environment variable counts once a lookup found it there.
    process.env.DSH_TEST_SECRET_KEY = 'from-env'
    expect(names()).not.toContain('DSH_TEST_SECRET_KEY=from-env')
    root.credentials.get('DSH_TEST_SECRET_KEY')
    expect(names()).toContain('DSH_TEST_SECRET_KEY=from-env')
    // An edit is seen without a restart.
    await root.credentials.set('NEW_KEY', 'sk-set-later')
    expect(names()).toContain('NEW_KEY=sk-set-later')
  })

  it('parses dotenv lines', () => {
    expect(parseDotenv("export A=1\nB='two words'\n# c\nC = x # note\n")).toEqual({
      A: '1',
      B: 'two words',
      C: 'x',
    })
  })

  it('parses quoted values: a comment after the quotes, escapes, several lines', () => {
    const text = [
      'KEY="sk-quoted" # the test key',
      'ESCAPED="a\\nb"',
      "LITERAL='a\\nb'",
      'PEM="-----BEGIN-----',
      'KEY=not-a-line-of-its-own',
      '-----END-----"',
    ].join('\n')
    expect(parseDotenv(text)).toEqual({
      KEY: 'sk-quoted',
      ESCAPED: 'a\nb',
      LITERAL: 'a\\nb',
      PEM: '-----BEGIN-----\nKEY=not-a-line-of-its-own\n-----END-----',
    })
  })
})
