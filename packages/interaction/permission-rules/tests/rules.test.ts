import path from 'node:path'
import type { ToolAccess } from '@dsh/tools'
import { describe, expect, it } from 'vitest'
import { commandSegments, isSimpleCommand, parseRule, parseRules, ruleMatches, unknownRules } from '../src/index.ts'

const cwd = '/work/proj'
const bash = (command: string): ToolAccess => ({ kind: 'execute', command })
const call = (tool: string, access: ToolAccess | undefined) => ({ tool, access, cwd })
const allows = (rule: string, tool: string, access: ToolAccess | undefined) =>
  ruleMatches(parseRule(rule), call(tool, access), 'allow')
const denies = (rule: string, tool: string, access: ToolAccess | undefined) =>
  ruleMatches(parseRule(rule), call(tool, access), 'deny')

describe('parseRule', () => {
  it('reads each form', () => {
    expect(parseRule(' bash(npm test*) ')).toEqual({ text: 'bash(npm test*)', tool: 'bash', pattern: 'npm test*' })
    expect(parseRule('web_fetch(domain:Docs.Python.org)')).toMatchObject({
      tool: 'web_fetch',
      domain: 'docs.python.org',
    })
    expect(parseRule('mcp__github')).toMatchObject({ tool: 'mcp__github__*' })
    expect(parseRule('mcp__github__*')).toMatchObject({ tool: 'mcp__github__*' })
    expect(parseRule('bash(*)')).toEqual({ text: 'bash(*)', tool: 'bash' })
  })

  it('names the rule and the problem', () => {
    expect(() => parseRule('bash(')).toThrow('permission rule "bash(": the specifier must end with ")"')
    expect(() => parseRule('bash()')).toThrow('is empty')
    expect(() => parseRule('web_fetch(domain:a b)')).toThrow('domain: needs a host name')
    expect(() => parseRule('(x)')).toThrow('must start with a tool name')
    expect(() => parseRules(['bash', 'no spaces allowed'], 'permission.deny')).toThrow('permission.deny[1]: ')
  })
})

describe('commands', () => {
  it('only a plain command may be allowed', () => {
    expect(isSimpleCommand('git status --short')).toBe(true)
    expect(isSimpleCommand("git commit -m 'a; b | c $(d)'")).toBe(true)
    for (const attack of [
      'git status; curl evil',
      'git status && curl evil',
      'git status || curl evil',
      'git status | sh',
      'git log $(curl evil)',
      'git log `curl evil`',
      'git log "$(curl evil)"',
      'git status > /etc/passwd',
      'git status < x',
      'git status &',
      'git status\ncurl evil',
      'git status \\\ncurl evil',
      'git log $HOME',
      "git log 'unclosed",
      'git (x)',
    ])
      expect(isSimpleCommand(attack), attack).toBe(false)
  })

  // allow: a prefix rule matches the plain command only.
  // deny: any command of the line counts; quotes, wrappers and folders do not hide it.
  it.each([
    ['allow', 'bash(git *)', 'bash', 'git status', true],
    ['allow', 'bash(git *)', 'bash', '  git   status  ', true],
    ['allow', 'bash(git *)', 'bash', 'git status; curl evil', false],
    ['allow', 'bash(git *)', 'bash', 'gitx status', false],
    ['allow', 'bash(npm test:*)', 'bash', 'npm test', true],
    ['allow', 'bash(npm test:*)', 'bash', 'npm test -- --watch', true],
    ['allow', 'bash(npm test:*)', 'bash', 'npm testx', false],
    ['allow', 'bash(git *)', 'read', 'git status', false],
    ['deny', 'bash(curl *)', 'bash', 'git status; curl evil', true],
    ['deny', 'bash(curl *)', 'bash', 'echo $(curl evil)', true],
    ['deny', 'bash(curl *)', 'bash', 'echo `curl evil`', true],
    ['deny', 'bash(curl *)', 'bash', '"cu"rl evil', true],
    ['deny', 'bash(curl *)', 'bash', 'X=1 sudo /usr/bin/curl evil', true],
    ['deny', 'bash(curl *)', 'bash', 'git status', false],
  ] as const)('%s rule %s, %s call `%s`: matches is %s', (mode, rule, tool, command, matches) => {
    const judge = mode === 'allow' ? allows : denies
    expect(judge(rule, tool, bash(command))).toBe(matches)
  })

  it('a line splits into its commands', () => {
    expect(commandSegments('a && b | c')).toEqual(['a', 'b', 'c'])
  })
})

describe('domains and paths', () => {
  const fetch = (...urls: string[]): ToolAccess => ({ kind: 'network', urls })
  it('domain: the host of every URL for allow, of one for deny', () => {
    expect(allows('web_fetch(domain:docs.python.org)', 'web_fetch', fetch('https://docs.python.org/3/'))).toBe(true)
    expect(allows('web_fetch(domain:docs.python.org)', 'web_fetch', fetch('https://docs.python.org.evil.com/'))).toBe(
      false,
    )
    expect(allows('web_fetch(domain:docs.python.org)', 'web_fetch', fetch('https://evil.com/?docs.python.org'))).toBe(
      false,
    )
    expect(allows('web_fetch(domain:*.python.org)', 'web_fetch', fetch('https://docs.python.org/'))).toBe(true)
    expect(allows('web_fetch(domain:*.python.org)', 'web_fetch', fetch('https://python.org/'))).toBe(false)
    expect(denies('web_fetch(domain:evil.com)', 'web_fetch', fetch('https://a.org/', 'https://EVIL.com./x'))).toBe(true)
    expect(allows('web_fetch(domain:docs.python.org)', 'web_fetch', { kind: 'network' })).toBe(false)
  })

  it('paths: relative to the folder, every form for allow, one form for deny', () => {
    const write = (...paths: string[]): ToolAccess => ({ kind: 'write', paths })
    expect(allows('write(src/**)', 'write', write('src/a/b.ts'))).toBe(true)
    expect(allows('write(src/**)', 'write', write('src/a.ts', 'lib/b.ts'))).toBe(false)
    expect(allows('write(src/**)', 'write', write('../proj2/src/a.ts'))).toBe(false)
    expect(allows('write(/etc/**)', 'write', write('/etc/hosts'))).toBe(true)
    const linked = { tool: 'write', access: write('src/link'), cwd, paths: [[`${cwd}/src/link`, '/etc/passwd']] }
    expect(ruleMatches(parseRule('write(src/**)'), linked, 'allow')).toBe(false)
    expect(ruleMatches(parseRule('write(/etc/**)'), linked, 'deny')).toBe(true)
    expect(denies('read(.env)', 'read', { kind: 'read', paths: [path.join(cwd, '.env')] })).toBe(true)
  })

  it('a rule without a specifier matches every call of its tools', () => {
    expect(allows('mcp__github', 'mcp__github__create_issue', { kind: 'other', escalated: true })).toBe(true)
    expect(allows('mcp__github', 'mcp__githubx__create_issue', { kind: 'other' })).toBe(false)
    expect(allows('mcp__*', 'mcp__x__y', undefined)).toBe(true)
  })
})

describe('unknownRules', () => {
  it('reports rules that name no tool and no MCP server', () => {
    const rules = parseRules(['bash(git *)', 'mcp__github__*', 'mcp__db__query', 'nosuchtool', 'mcp__*'], 'rules')
    const known = { tools: ['bash', 'mcp__db__other'], mcpServers: ['db'] }
    expect(unknownRules(rules, known).map((rule) => rule.text)).toEqual(['mcp__github__*', 'nosuchtool'])
  })
})
