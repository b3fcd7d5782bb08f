import { describe, expect, it } from 'vitest'
import { parseLauncherArgs } from '../src/args.ts'

describe('parseLauncherArgs', () => {
  it.each([
    [['web'], { kind: 'boot', profile: 'web', patches: [], dump: null, appArgs: [] }],
    [
      ['--profile', 'headless', 'fix it'],
      { kind: 'boot', profile: 'headless', patches: [], dump: null, appArgs: ['fix it'] },
    ],
    [
      ['web', '--port', '0', '--no-open'],
      { kind: 'boot', profile: 'web', patches: [], dump: null, appArgs: ['--port', '0', '--no-open'] },
    ],
    [['web', '--help'], { kind: 'boot', profile: 'web', patches: [], dump: null, appArgs: ['--help'] }],
    [
      ['mine', '--patch', 'a.yml', '--patch=b.yml', 'x'],
      { kind: 'boot', profile: 'mine', patches: ['a.yml', 'b.yml'], dump: null, appArgs: ['x'] },
    ],
    [['--profile=sdk', '--dump-config'], { kind: 'boot', profile: 'sdk', patches: [], dump: 'config', appArgs: [] }],
    [
      ['headless', '--', '--literal'],
      { kind: 'boot', profile: 'headless', patches: [], dump: null, appArgs: ['--literal'] },
    ],
    [
      ['headless', 'task', '--patch', 'x'],
      { kind: 'boot', profile: 'headless', patches: ['x'], dump: null, appArgs: ['task'] },
    ],
    [
      ['--profile', 'headless', '--permission', 'read-only', '--patch', 'f.yml', '--json', 'the task'],
      {
        kind: 'boot',
        profile: 'headless',
        patches: ['f.yml'],
        dump: null,
        appArgs: ['--permission', 'read-only', '--json', 'the task'],
      },
    ],
    [
      ['headless', 'task', '--', '--patch', 'x', '--'],
      { kind: 'boot', profile: 'headless', patches: [], dump: null, appArgs: ['task', '--patch', 'x', '--'] },
    ],
    [['-h'], { kind: 'help' }],
    [['--version'], { kind: 'version' }],
    [['plugin', '--profile', 'mine', 'add', './x'], { kind: 'plugin', profile: 'mine', pnpmArgs: ['add', './x'] }],
    [['sessions', 'search', 'flaky', '--limit', '3'], { kind: 'sessions', args: ['search', 'flaky', '--limit', '3'] }],
    [['sessions'], { kind: 'sessions', args: [] }],
  ])('parses %j', (argv, expected) => {
    expect(parseLauncherArgs(argv)).toEqual(expected)
  })

  it.each([
    [[], /--profile <name> is required/],
    [['--patch', 'x'], /--profile <name> is required/],
    [['web', '--profile', 'web'], /select a profile only once/],
    [['web', '--dump-config', '--dump-default-config'], /mutually exclusive/],
    [['web', '--dump-config', 'extra'], /config dumps take no app arguments, got extra/],
    [['web', '--port', '1', '--dump-config'], /config dumps take no app arguments, got --port 1/],
    [['web', '--dump-default-config', '--patch', 'x'], /takes no --patch/],
    [['web', '--patch'], /--patch needs a path/],
    [['web', '--patch='], /--patch needs a path/],
    [['web', '--patch', ''], /--patch needs a path/],
    [['../etc'], /invalid profile name "..\/etc"/],
    [['--profile', 'node_modules'], /invalid profile name "node_modules"/],
    [['plugin', '--profile', 'mine'], /plugin needs pnpm arguments/],
    [['plugin', 'add', 'x'], /usage: dsh plugin --profile/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseLauncherArgs(argv)).toThrow(message)
  })
})
