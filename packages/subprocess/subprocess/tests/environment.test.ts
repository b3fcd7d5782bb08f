import { Context } from '@dsh/cordis'
import { describe, expect, it } from 'vitest'
import * as subprocessPlugin from '../src/index.ts'
import {
  Config,
  DEFAULT_ENVIRONMENT_POLICY,
  EnvironmentPolicy,
  type EnvironmentPolicyConfig,
  type LocalSubprocessConfig,
  scrubEnvironment,
} from '../src/index.ts'

const policy = (config: Partial<EnvironmentPolicyConfig> = {}) =>
  new EnvironmentPolicy({ ...DEFAULT_ENVIRONMENT_POLICY, ...config })

/** Each secret-looking variable of issue 16 (and a few more spellings of the same patterns). */
const SECRETS: Record<string, string> = {
  OPENAI_API_KEY: 'x',
  keyring: 'x',
  MySecretThing: 'x',
  GITHUB_TOKEN: 'x',
  db_password: 'x',
  MYSQL_PWD: 'x',
  NPM_CONFIG__AUTH: 'x',
  GH_PAT: 'x',
  GOOGLE_CREDENTIALS: 'x',
  GOOGLE_APPLICATION_CREDENTIALS: '/path/to/creds.json',
  PASSPHRASE: 'x',
  MY_PASSWD: 'x',
  CF_API_CREDENTIAL: 'x',
  SSH_AUTH_SOCK: '/tmp/ssh-agent.sock',
  GPG_AGENT_INFO: '/run/gpg:0:1',
  SESSION_COOKIE: 'x',
  TLS_PRIVATE_PEM: 'x',
  DSH_HOME: '/root/.dsh',
  DSH_LOG_LEVEL: 'warn',
  dsh_model: 'x',
}

/** What programs need, and names that only look close to a pattern. */
const ORDINARY: Record<string, string> = {
  PATH: '/usr/bin:/bin',
  HOME: '/root',
  LANG: 'C.UTF-8',
  TERM: 'xterm',
  PWD: '/work',
  OLDPWD: '/',
  SHELL: '/bin/bash',
  USER: 'root',
  FOO: 'bar',
  HOMEPAGE_URL: 'https://example.com/path?user=me',
  GIT_REMOTE: 'ssh://git@github.com/o/r.git',
  PROXY: 'http://proxy.local:3128',
  EMPTY_URL_USERINFO: 'postgres://u:@h/db',
}

describe('the default policy', () => {
  it('removes every secret-looking name and every DSH_* variable, case-insensitively', () => {
    const out = scrubEnvironment({ ...SECRETS, ...ORDINARY })
    for (const name of Object.keys(SECRETS)) expect(out, name).not.toHaveProperty(name)
  })

  it('keeps PWD, OLDPWD, PATH, HOME, LANG, TERM, SHELL, USER and ordinary names', () => {
    expect(scrubEnvironment({ ...SECRETS, ...ORDINARY })).toEqual(ORDINARY)
  })

  it('removes a variable whose value carries a URL with a password, whatever its name', () => {
    const out = scrubEnvironment({
      DATABASE_URL: 'postgres://u:pass@h/db',
      REDIS: 'redis://:hunter2@cache:6379/0',
      MIRRORS: 'https://a.example, https://bob:p%40ss@b.example/repo',
      JDBC: 'jdbc:mysql://root:toor@db:3306/app',
      FOO: 'bar',
    })
    expect(out).toEqual({ FOO: 'bar' })
  })

  it('skips unset entries', () => {
    expect(scrubEnvironment({ FOO: 'bar', GONE: undefined })).toEqual({ FOO: 'bar' })
  })
})

describe('a configured policy', () => {
  const env = { ...SECRETS, ...ORDINARY, EXTRA_1: 'one', EXTRA_2: 'two', LC_ALL: 'C', EDITOR: 'vi' }

  it('exclude removes more names by glob, case-insensitively', () => {
    const out = policy({ exclude: ['extra_*', 'EDIT?R'] }).apply(env)
    expect(out).not.toHaveProperty('EXTRA_1')
    expect(out).not.toHaveProperty('EXTRA_2')
    expect(out).not.toHaveProperty('EDITOR')
    expect(out.FOO).toBe('bar')
  })

  it('includeOnly keeps only matching inherited names, and set still applies after it', () => {
    const out = policy({ includeOnly: ['PATH', 'extra_1', 'OPENAI_*'], set: { FORCED: 'yes' } }).apply(env)
    // OPENAI_API_KEY matches includeOnly but the default excludes still remove it.
    expect(out).toEqual({ PATH: '/usr/bin:/bin', EXTRA_1: 'one', FORCED: 'yes' })
  })

  it('set overrides what was inherited and may name anything, DSH_* included', () => {
    const out = policy({ set: { FOO: 'changed', DSH_SANDBOXED: '1' } }).apply(env)
    expect(out.FOO).toBe('changed')
    expect(out.DSH_SANDBOXED).toBe('1')
  })

  it("ignoreDefaultExcludes keeps secret-looking names and URL passwords, but never dsh's own variables", () => {
    const out = policy({ ignoreDefaultExcludes: true }).apply({ ...env, DATABASE_URL: 'postgres://u:p@h/db' })
    expect(out.GH_PAT).toBe('x')
    expect(out.MYSQL_PWD).toBe('x')
    expect(out.DATABASE_URL).toBe('postgres://u:p@h/db')
    expect(Object.keys(out).filter((name) => /^dsh_/i.test(name))).toEqual([])
  })

  it('inherit: core keeps the core variables only; inherit: none keeps nothing but set', () => {
    expect(policy({ inherit: 'core' }).apply(env)).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/root',
      LANG: 'C.UTF-8',
      LC_ALL: 'C',
      TERM: 'xterm',
      PWD: '/work',
      SHELL: '/bin/bash',
      USER: 'root',
    })
    expect(policy({ inherit: 'none', set: { ONLY: 'me' } }).apply(env)).toEqual({ ONLY: 'me' })
  })

  it('refuses a bad pattern or name, naming the field and the entry', () => {
    expect(() => policy({ exclude: ['OK', 'bad pattern'] })).toThrow(
      'environment policy: exclude[1]: "bad pattern" is not a valid pattern',
    )
    expect(() => policy({ includeOnly: [''] })).toThrow('includeOnly[0]: "" is not a valid pattern')
    expect(() => policy({ includeOnly: ['A[BC]'] })).toThrow('includeOnly[0]: "A[BC]" is not a valid pattern')
    expect(() => policy({ set: { '1ST': 'x' } })).toThrow('set.1ST: "1ST" is not a valid variable name')
    expect(() => policy({ set: { 'A=B': 'x' } })).toThrow('set.A=B: "A=B" is not a valid variable name')
    expect(() => policy({ set: { NUL: 'a\0b' } })).toThrow('set.NUL: the value must be a string without NUL characters')
  })
})

describe('the environment config field', () => {
  const issues = (config: unknown) => {
    const result = Config['~standard'].validate(config) as { issues?: { message: string; path?: unknown[] }[] }
    return result.issues
  }

  it('defaults to inherit all with the default excludes', () => {
    expect(Config({} as LocalSubprocessConfig).environment).toEqual(DEFAULT_ENVIRONMENT_POLICY)
  })

  it('fills in the fields a partial policy leaves out', () => {
    expect(issues({ environment: { exclude: ['NORMAL_*'] } })).toBeUndefined()
    expect(Config({ environment: { set: { A: 'b' } } } as unknown as LocalSubprocessConfig).environment).toEqual({
      ...DEFAULT_ENVIRONMENT_POLICY,
      set: { A: 'b' },
    })
  })

  it('reports a bad pattern at its path with the entry', () => {
    expect(issues({ environment: { exclude: ['FINE_*', 'no spaces'] } })).toEqual([
      { message: expect.stringContaining('"no spaces" is not a valid pattern'), path: ['environment', 'exclude', 1] },
    ])
    expect(issues({ environment: { set: { 'bad-name': 'x' } } })).toEqual([
      {
        message: expect.stringContaining('"bad-name" is not a valid variable name'),
        path: ['environment', 'set', 'bad-name'],
      },
    ])
    expect(issues({ environment: { inherit: 'some' } })?.[0]?.path).toEqual(['environment', 'inherit'])
  })

  it('refuses to mount the plugin with a bad pattern', async () => {
    const root = new Context()
    try {
      const bad = {
        environment: { ...DEFAULT_ENVIRONMENT_POLICY, includeOnly: ['PATH', 'HO ME'] },
      } as LocalSubprocessConfig
      await expect(root.plugin(subprocessPlugin, bad)).rejects.toThrow(
        /environment\.includeOnly\[1\] "HO ME" is not a valid pattern/,
      )
    } finally {
      await root.fiber.dispose()
    }
  })
})
