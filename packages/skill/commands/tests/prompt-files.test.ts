import { mkdir, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { tempDir } from '@dsh/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { parseCommandLine } from '../src/index.ts'
import { discoverPromptFiles, fillArguments, splitArguments } from '../src/prompt-files.ts'

let dispose: () => Promise<void> = async () => {}
afterEach(() => dispose())

async function folder(): Promise<string> {
  const tmp = await tempDir()
  dispose = tmp.dispose
  return tmp.dir
}

describe('command lines', () => {
  it('reads /name and its arguments, and leaves paths and prose alone', () => {
    expect(parseCommandLine('/review 42 carefully')).toEqual({ name: 'review', args: '42 carefully' })
    expect(parseCommandLine('  /deploy\n')).toEqual({ name: 'deploy', args: '' })
    expect(parseCommandLine('/etc/hosts is empty')).toBeUndefined()
    expect(parseCommandLine('please run /review')).toBeUndefined()
  })

  it('fills $ARGUMENTS and $1..$9, quotes grouping words, and appends arguments a prompt does not place', () => {
    expect(splitArguments(`fix "the login page" 'high'`)).toEqual(['fix', 'the login page', 'high'])
    expect(fillArguments('Review PR $ARGUMENTS.', '42 now')).toBe('Review PR 42 now.')
    expect(fillArguments('Fix issue $1 with priority $2 ($3).', '7 "very high"')).toBe(
      'Fix issue 7 with priority very high ().',
    )
    expect(fillArguments('Summarise the changes.\n', 'in French')).toBe(
      'Summarise the changes.\n\nARGUMENTS: in French',
    )
    expect(fillArguments('Summarise the changes.', '')).toBe('Summarise the changes.')
  })
})

describe('prompt files', () => {
  it('finds commands in roots and subfolders, first root first, with frontmatter or the first line', async () => {
    const dir = await folder()
    const project = path.join(dir, 'project')
    const user = path.join(dir, 'user')
    await mkdir(path.join(project, 'frontend'), { recursive: true })
    await mkdir(user, { recursive: true })
    await writeFile(
      path.join(project, 'review.md'),
      '---\ndescription: Review a pull request\nargument-hint: <number>\n---\nReview PR $ARGUMENTS.\n',
    )
    await writeFile(path.join(project, 'frontend', 'component.md'), '# Make a component\n\nCreate $1.\n')
    await writeFile(path.join(user, 'review.md'), 'The user one, shadowed.\n')
    await writeFile(path.join(user, 'standup.md'), 'Write my standup notes.\n')
    await writeFile(path.join(user, 'bad name!.md'), 'x')
    const { commands, skipped } = discoverPromptFiles(
      [
        { folder: project, scope: 'project' },
        { folder: user, scope: 'user' },
      ],
      10_000,
    )
    expect(
      commands.map(({ name, description, argumentHint, scope }) => ({ name, description, argumentHint, scope })),
    ).toEqual([
      { name: 'component', description: 'Make a component', argumentHint: undefined, scope: 'project:frontend' },
      { name: 'review', description: 'Review a pull request', argumentHint: '<number>', scope: 'project' },
      { name: 'standup', description: 'Write my standup notes.', argumentHint: undefined, scope: 'user' },
    ])
    expect(skipped).toEqual([
      { file: path.join(user, 'bad name!.md'), why: expect.stringContaining('not a command name') },
    ])
  })

  it('skips a command file that leads outside its folder, naming where it leads', async () => {
    const dir = await folder()
    const root = path.join(dir, 'commands')
    await mkdir(root)
    await writeFile(path.join(dir, 'secret.txt'), 'sk-live-secret\n')
    await symlink(path.join(dir, 'secret.txt'), path.join(root, 'steal.md'))
    const { commands, skipped } = discoverPromptFiles([{ folder: root, scope: 'project' }], 10_000)
    expect(commands).toEqual([])
    expect(skipped[0]?.why).toContain('leads outside')
  })
})
