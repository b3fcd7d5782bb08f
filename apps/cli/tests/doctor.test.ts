import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { runDsh, tempDir } from '@dsh/testkit'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

interface Check {
  name: string
  status: 'ok' | 'warn' | 'fail'
  summary: string
  found?: string[]
  fix?: string
}

let home: string
let work: string
const cleanups: (() => Promise<void>)[] = []

beforeEach(async () => {
  const h = await tempDir('dsh-doctor-home-')
  const w = await tempDir('dsh-doctor-work-')
  cleanups.push(h.dispose, w.dispose)
  home = h.dir
  work = realpathSync(w.dir)
})

afterEach(async () => {
  for (const dispose of cleanups.splice(0)) await dispose()
})

async function doctorJson(env: Record<string, string | undefined> = {}) {
  const result = await runDsh(['doctor', '--json'], { home, cwd: work, env })
  const report = JSON.parse(result.stdout) as { ok: boolean; checks: Check[] }
  const check = (name: string) => report.checks.find((c) => c.name === name) as Check
  return { result, report, check }
}

describe('dsh doctor', () => {
  it('reports a fresh home: no model key, exit 1 naming the failing check', async () => {
    const text = await runDsh(['doctor'], { home, cwd: work })
    expect(text.code).toBe(1)
    expect(text.stdout).toMatch(/^FAIL model: deepseek \/ deepseek-v4-flash .*the key DEEPSEEK_API_KEY is not set$/m)
    expect(text.stdout).toContain(`fix: set DEEPSEEK_API_KEY in the environment`)
    expect(text.stdout).toMatch(/^ok {3}sandbox: bwrap confines commands/m)
    expect(text.stdout).toMatch(/^ok {3}node: Node \d+\.\d+\.\d+$/m)
    expect(text.stdout.trimEnd().split('\n').at(-1)).toBe('failed: model')

    const { result, report, check } = await doctorJson()
    expect(result.code).toBe(1)
    expect(report.ok).toBe(false)
    expect(check('model').status).toBe('fail')
    expect(check('credentials').found).toContain(
      'DEEPSEEK_API_KEY: not set (used by llm-deepseek, web-search-deepseek)',
    )
    expect(check('workspace trust').summary).toContain(`${work} is not trusted`)
  })

  it('with the key in the environment every check passes, and the value is never printed', async () => {
    const secret = 'sk-doctor-secret-value'
    const { result, report, check } = await doctorJson({ DEEPSEEK_API_KEY: secret })
    expect(result.code).toBe(0)
    expect(report.ok).toBe(true)
    expect(check('model').summary).toContain('key DEEPSEEK_API_KEY from env')
    expect(check('credentials').found).toContain(
      'DEEPSEEK_API_KEY: set (env) (used by llm-deepseek, web-search-deepseek)',
    )
    expect(result.stdout + result.stderr).not.toContain(secret)
  })

  it('reports each config file of a project with its path, and whether the folder is trusted', async () => {
    mkdirSync(path.join(work, '.git'))
    writeFileSync(path.join(work, 'CLAUDE.md'), 'Use tabs.\n')
    writeFileSync(
      path.join(work, '.mcp.json'),
      JSON.stringify({ mcpServers: { tracker: { command: 'node', args: ['-e', 'process.exit(1)'] } } }),
    )
    mkdirSync(path.join(work, '.claude/commands'), { recursive: true })
    writeFileSync(path.join(work, '.claude/commands/review.md'), 'Review the diff.\n')
    mkdirSync(path.join(work, '.claude/skills/release'), { recursive: true })
    writeFileSync(
      path.join(work, '.claude/skills/release/SKILL.md'),
      '---\nname: release\ndescription: Cut a release.\n---\nBump it.\n',
    )
    const hooksFile = path.join(work, '.claude/settings.json')
    writeFileSync(
      hooksFile,
      JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: 'touch hooked' }] }] } }),
    )
    writeFileSync(path.join(home, '.credentials.yaml'), 'version: 1\nrefs:\n  DEEPSEEK_API_KEY: sk-from-file\n', {
      mode: 0o600,
    })

    const untrusted = await doctorJson()
    expect(untrusted.result.code).toBe(0)
    expect(untrusted.check('instructions').found).toEqual([`${path.join(work, 'CLAUDE.md')} (project, fallback)`])
    expect(untrusted.check('commands').summary).toContain('/review')
    expect(untrusted.check('commands').found).toEqual([`${path.join(work, '.claude/commands')} (folder)`])
    expect(untrusted.check('skills').found).toEqual([`${path.join(work, '.claude/skills')} (1 skill(s))`])
    expect(untrusted.check('hooks').found).toEqual([`${hooksFile} (claude-code, project, not run: folder not trusted)`])
    expect(untrusted.check('mcp').found).toEqual([
      `${path.join(work, '.mcp.json')} (project; servers: tracker; not started: folder not trusted)`,
    ])
    expect(untrusted.check('model').summary).toContain('key DEEPSEEK_API_KEY from file')
    expect(untrusted.result.stdout).not.toContain('sk-from-file')
    // Reporting runs nothing from the project: the hook did not run.
    expect(untrusted.result.stdout).not.toContain('hooked')

    writeFileSync(path.join(home, 'trusted-folders.json'), JSON.stringify({ version: 1, folders: [work] }), {
      mode: 0o600,
    })
    const trusted = await doctorJson()
    expect(trusted.check('workspace trust').summary).toBe(`${work} is trusted`)
    expect(trusted.check('hooks').found).toEqual([`${hooksFile} (claude-code, project)`])
  })

  it('reports a sandbox without bwrap on PATH with the command that installs it', async () => {
    const bin = path.join(work, 'bin')
    mkdirSync(bin)
    symlinkSync(process.execPath, path.join(bin, 'node'))
    const result = await runDsh(['doctor'], {
      home,
      cwd: work,
      env: { PATH: bin, DEEPSEEK_API_KEY: 'sk-test' },
    })
    expect(result.code).toBe(1)
    expect(result.stdout).toMatch(/^FAIL sandbox: .*bwrap/m)
    expect(result.stdout).toMatch(/fix: install bubblewrap: (sudo )?apt-get install -y bubblewrap$/m)
    expect(result.stdout).toMatch(/^warn slirp4netns: slirp4netns not found/m)
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe('failed: sandbox')
  })

  it('a local OpenAI-compatible route passes without a key', async () => {
    const { result, check } = await doctorJson({
      DSH_PROVIDER: 'openai-compatible',
      DSH_BASE_URL: 'http://127.0.0.1:9/v1',
    })
    expect(result.code, result.stdout).toBe(0)
    expect(check('model').summary).toMatch(
      /^openai-compatible \/ .*key OPENAI_COMPATIBLE_API_KEY not set \(optional\)$/,
    )
  })
})
