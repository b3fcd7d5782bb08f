import { Command } from 'commander'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { CmdlineArgs, parseCmdline } from '../src/index.ts'

function run(args: string[], build: (p: Command) => Command = (p) => p.argument('[task...]')) {
  const exits: number[] = []
  const ctx = { cmdlineArgs: new CmdlineArgs(args), appExit: (code: number) => void exits.push(code) }
  const program = build(new Command('dsh --profile test'))
  const value = parseCmdline(ctx, program, ({ args: rest }) => {
    const task = rest.join(' ').trim()
    if (!task) program.error('a task is required')
    return { task }
  })
  return { value, exits }
}

describe('parseCmdline', () => {
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
  afterEach(() => {
    out.mockClear()
    err.mockClear()
  })

  it('returns the accepted value and does not exit', () => {
    expect(run(['fix', 'the', 'tests'])).toEqual({ value: { task: 'fix the tests' }, exits: [] })
  })

  it('prints help on stdout and exits 0', () => {
    expect(run(['--help'])).toEqual({ value: undefined, exits: [0] })
    expect(String(out.mock.calls[0]?.[0])).toContain('Usage: dsh --profile test')
  })

  it('rejects a value refused by accept with exit 1', () => {
    expect(run(['  '])).toEqual({ value: undefined, exits: [1] })
    expect(String(err.mock.calls[0]?.[0])).toContain('a task is required')
  })

  it('rejects unknown options with exit 1', () => {
    expect(run(['--bogus'], (p) => p)).toEqual({ value: undefined, exits: [1] })
    expect(String(err.mock.calls[0]?.[0])).toContain("unknown option '--bogus'")
  })
})
