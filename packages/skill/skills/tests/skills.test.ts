import { mkdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { Context } from '@dsh/cordis'
import type { ToolCallId } from '@dsh/llm'
import * as systemPrompt from '@dsh/system-prompt'
import { textOf, type ToolResult, ToolRuntime } from '@dsh/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as skills from '../src/index.ts'
import { parseSkill, type SkillsConfig } from '../src/index.ts'
import { collectWarnings, tempProject } from '@dsh/testkit'

let base: string
let project: string
let workspace: string
let homeSkills: string
let root: Context
let warnings: string[]

async function skill(rootDir: string, folder: string, text: string, extra: Record<string, string> = {}) {
  const dir = path.join(rootDir, folder)
  await mkdir(dir, { recursive: true })
  await writeFile(path.join(dir, 'SKILL.md'), text)
  for (const [name, content] of Object.entries(extra)) await writeFile(path.join(dir, name), content)
  return dir
}

const md = (name: string, description: string, body = `Body of ${name}.`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`

beforeEach(async () => {
  const tree = await tempProject('dsh-skills-', 'src')
  ;({ base, project, workspace } = tree)
  homeSkills = path.join(tree.home, 'skills')
  root = new Context()
  warnings = collectWarnings(root)
  await root.plugin(ToolRuntime, {} as never)
  await root.plugin(systemPrompt, { persona: '', guidance: '', timeZone: '' })
})

afterEach(async () => {
  await root.fiber.dispose()
  await rm(base, { recursive: true, force: true })
})

async function mount(config: Partial<SkillsConfig> = {}) {
  const fiber = root.plugin(skills, { roots: ['.dsh/skills', homeSkills], ...config } as SkillsConfig)
  await fiber
  return fiber
}

const render = () => root.systemPrompt.render({ sessionId: 's', cwd: workspace, model: 'm', provider: 'p' })

let calls = 0
function callSkill(name: string): Promise<ToolResult> {
  return root.tools.execute(
    { callId: `call-${++calls}` as ToolCallId, name: 'skill', arguments: JSON.stringify({ name }) },
    { signal: new AbortController().signal, cwd: workspace, sessionId: 's', sessionState: new Map() },
  )
}

describe('skills', () => {
  it('lists project and home skills in the prompt; the project wins a name both define', async () => {
    const projectSkills = path.join(project, '.dsh', 'skills')
    await skill(projectSkills, 'deploy', md('deploy', 'Ship the app to production.'))
    await skill(homeSkills, 'deploy', md('deploy', 'The home copy, shadowed.'))
    await skill(homeSkills, 'review', md('review', 'Review a change for bugs.'))
    await mount()
    const prompt = await render()
    expect(prompt).toContain('# Skills')
    expect(prompt).toContain('- `deploy`: Ship the app to production.')
    expect(prompt).toContain('- `review`: Review a change for bugs.')
    expect(prompt).not.toContain('shadowed')
    expect(warnings).toEqual([])
  })

  it('loads a skill with the skill tool: its body and its folder', async () => {
    const folder = await skill(
      path.join(project, '.dsh', 'skills'),
      'deploy',
      md('deploy', 'Ship it.', 'Run ./deploy.sh from this folder.'),
      {
        'deploy.sh': 'echo deploying',
      },
    )
    await mount()
    const result = await callSkill('deploy')
    expect(result.isError).toBe(false)
    const text = textOf(result.content)
    expect(text).toContain(`<skill name="deploy" folder="${folder}">`)
    expect(text).toContain('Run ./deploy.sh from this folder.')
    expect(text).not.toContain('description: Ship it.')
    expect(result.meta).toEqual({ name: 'deploy', folder })
  })

  it('re-reads the body at every load', async () => {
    const dir = path.join(project, '.dsh', 'skills')
    await skill(dir, 'deploy', md('deploy', 'Ship it.', 'OLD BODY'))
    await mount()
    expect(textOf((await callSkill('deploy')).content)).toContain('OLD BODY')
    await skill(dir, 'deploy', md('deploy', 'Ship it.', 'NEW BODY'))
    expect(textOf((await callSkill('deploy')).content)).toContain('NEW BODY')
  })

  it('answers an unknown name with the names it knows', async () => {
    await skill(homeSkills, 'review', md('review', 'Review a change.'))
    await mount()
    const result = await callSkill('deploy')
    expect(result.error?.code).toBe('UNKNOWN_SKILL')
    expect(textOf(result.content)).toBe('Error: there is no skill named "deploy". Available skills: review.')
  })

  it('skips a SKILL.md without frontmatter, without a name or description, or with bad YAML, warning once per file', async () => {
    const dir = path.join(project, '.dsh', 'skills')
    await skill(dir, 'good', md('good', 'Fine.'))
    const plain = path.join(await skill(dir, 'plain', '# Just markdown\nNo frontmatter here.\n'), 'SKILL.md')
    const nameless = path.join(await skill(dir, 'nameless', '---\ndescription: No name.\n---\nbody\n'), 'SKILL.md')
    const silent = path.join(await skill(dir, 'silent', '---\nname: silent\n---\nbody\n'), 'SKILL.md')
    const broken = path.join(
      await skill(dir, 'broken', '---\nname: [unclosed\ndescription: x\n---\nbody\n'),
      'SKILL.md',
    )
    await mount()
    const prompt = await render()
    await render()
    expect(prompt).toContain('`good`')
    for (const name of ['plain', 'nameless', 'silent', 'broken']) expect(prompt).not.toContain(`\`${name}\``)
    expect(warnings).toHaveLength(4)
    expect(warnings).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`${plain} has no YAML frontmatter`),
        expect.stringContaining(`${nameless}: the frontmatter has no name`),
        expect.stringContaining(`${silent}: the frontmatter has no description`),
        expect.stringContaining(`${broken}: malformed YAML`),
      ]),
    )
    expect((await callSkill('plain')).error?.code).toBe('UNKNOWN_SKILL')
  })

  it('warns about two folders of one root that claim the same name, keeping the first', async () => {
    const dir = path.join(project, '.dsh', 'skills')
    await skill(dir, 'a-deploy', md('deploy', 'First.'))
    const second = await skill(dir, 'b-deploy', md('deploy', 'Second.'))
    await mount()
    expect(await render()).toContain('- `deploy`: First.')
    expect(warnings).toEqual([
      expect.stringContaining(`skill "deploy" is already defined by ${path.join(dir, 'a-deploy', 'SKILL.md')}`),
    ])
    expect(warnings[0]).toContain(second)
  })

  it('cuts long descriptions in the catalog and leaves the section out when there are no skills', async () => {
    await mount({ maxDescriptionChars: 10 })
    expect(await render()).toBe('')
    await skill(homeSkills, 'long', md('long', 'abcdefghijklmnopqrstuvwxyz'))
    expect(await render()).toContain('- `long`: abcdefghi…')
  })

  it('passes {{braces}} in descriptions through untouched', async () => {
    await skill(homeSkills, 'ci', md('ci', "'Uses ${{ secrets.TOKEN }} and {{unknown}}'"))
    await mount()
    expect(await render()).toContain('- `ci`: Uses ${{ secrets.TOKEN }} and {{unknown}}')
  })

  it('removes the tool and the catalog with the plugin', async () => {
    await skill(homeSkills, 'review', md('review', 'Review a change.'))
    const fiber = await mount()
    expect(root.tools.get('skill')).toBeDefined()
    await fiber.dispose()
    expect(root.tools.get('skill')).toBeUndefined()
    expect(await render()).toBe('')
  })
})

describe('parseSkill', () => {
  it('splits frontmatter and body, with CRLF line ends and a BOM', async () => {
    expect(parseSkill('\uFEFF---\r\nname: x\r\ndescription: "  spaced\n  out "\r\n---\r\nthe body\r\n', 'f')).toEqual({
      name: 'x',
      description: 'spaced out',
      body: 'the body\r\n',
    })
  })

  it('refuses a name with spaces or slashes', async () => {
    expect(() => parseSkill(md('../escape', 'x'), '/s/SKILL.md')).toThrow('/s/SKILL.md: name "../escape" must be')
  })
})
