import os from 'node:os'
import path from 'node:path'
import type {} from '@dsh/commands'
import { type Context, Schema, stringList } from '@dsh/cordis'
import { projectFolders } from '@dsh/system-prompt'
import { defineTool, errorMessage, textArgument, ToolError, toolParameters } from '@dsh/tools'
import { z } from 'zod'
import { type Discovery, parseSkill, readSkillFile, type Skill, SkillScanner } from './discover.ts'

export {
  parseSkill,
  readSkillFile,
  SkillScanner,
  SKILL_FILE,
  type Discovery,
  type ParsedSkill,
  type Skill,
  type SkippedSkill,
} from './discover.ts'

export interface SkillsConfig {
  roots: string[]
  maxDescriptionChars: number
  maxFileBytes: number
  order: number
}

export const Config: Schema<SkillsConfig> = Schema.object({
  roots: stringList(
    'Folders holding skill folders (<root>/<name>/SKILL.md), highest priority first: a name found in an earlier root wins. ' +
      'Relative roots resolve against the project root (the nearest folder with .git, else the workspace), ~/ against the home folder. ' +
      'The base bundle reads .dsh/skills, .claude/skills, .agents/skills, then $DSH_HOME/skills and ~/.agents/skills.',
    ['.dsh/skills'],
  ),
  maxDescriptionChars: Schema.natural()
    .min(1)
    .default(500)
    .description('A longer description is cut in the catalog the model sees.'),
  maxFileBytes: Schema.natural().min(1).default(262_144).description('A larger SKILL.md is skipped with a warning.'),
  order: Schema.number()
    .default(300)
    .description('Where the skill catalog goes in the system prompt (lower comes first).'),
})

export const name = 'skills'
export const inject = ['tools', 'systemPrompt']

const skillParameters = toolParameters(
  z.object({ name: z.string().min(1).describe('The skill name, exactly as the catalog lists it.') }),
)

/**
 * Skills: folders with a SKILL.md (frontmatter `name`, `description`) from
 * the project and the user's home. Their catalog is a system-prompt section;
 * the `skill` tool hands the model one skill's instructions and folder.
 */
export function apply(ctx: Context, config: SkillsConfig) {
  const logger = ctx.logger('skills')
  const scanner = new SkillScanner()
  const reported = new Set<string>()

  const discover = (cwd: string): Discovery => {
    const project = projectFolders(cwd).root ?? path.resolve(cwd)
    const roots = config.roots.map((root) =>
      root === '~' || root.startsWith('~/') ? path.join(os.homedir(), root.slice(1)) : path.resolve(project, root),
    )
    const found = scanner.discover({ roots, maxFileBytes: config.maxFileBytes })
    for (const skipped of found.skipped) {
      if (reported.has(skipped.key)) continue
      reported.add(skipped.key)
      logger.warn('skill skipped: %s', skipped.why)
    }
    return found
  }

  ctx.systemPrompt.section(ctx, {
    name: 'skill:catalog',
    order: config.order,
    literal: true,
    text: (target) => {
      try {
        return renderCatalog(discover(target.cwd).skills, config.maxDescriptionChars)
      } catch (error) {
        logger.warn('skills for %s could not be listed: %s', target.cwd, errorMessage(error))
        return undefined
      }
    },
  })

  ctx.tools.register(
    ctx,
    defineTool({
      name: 'skill',
      presentation: {
        kind: 'read',
        view: 'read',
        title: (args) => `Load the skill ${textArgument(args, 'name') ?? ''}`.trim(),
      },
      description:
        'Load a skill: its instructions and the folder holding its supporting files. Call it with a name from the skill catalog in the system prompt ' +
        'when a task matches that skill, before you start the task.',
      parameters: skillParameters,
      readOnly: true,
      isConcurrencySafe: () => true,
      access: (args) => ({ kind: 'read', summary: `skill ${args.name}` }),
      execute(args, run) {
        const { skills } = discover(run.cwd)
        const skill = skills.find((s) => s.name === args.name)
        if (!skill) {
          const known = skills.length
            ? `Available skills: ${skills.map((s) => s.name).join(', ')}.`
            : 'No skills are available.'
          throw new ToolError('UNKNOWN_SKILL', `there is no skill named "${args.name}". ${known}`)
        }
        let body: string
        try {
          body = parseSkill(readSkillFile(skill.file, config.maxFileBytes), skill.file).body
        } catch (error) {
          throw new ToolError('SKILL_UNREADABLE', `skill "${skill.name}" could not be loaded: ${errorMessage(error)}`)
        }
        return { content: renderSkill(skill, body), meta: { name: skill.name, folder: skill.folder } }
      },
    }),
  )

  // Each skill is also callable as `/name args` where ctx.commands exists: its instructions become the prompt.
  ctx.plugin({
    name: 'skills-as-commands',
    inject: ['commands'],
    apply: (ctx: Context) => {
      ctx.commands.register(ctx, 'skills', {
        list: (cwd) =>
          discover(cwd).skills.map((skill) => ({
            name: skill.name,
            description: skill.description.slice(0, config.maxDescriptionChars),
            scope: 'skill',
          })),
        expand: (name, args, cwd) => {
          const skill = discover(cwd).skills.find((s) => s.name === name)
          if (!skill) return undefined
          const body = parseSkill(readSkillFile(skill.file, config.maxFileBytes), skill.file).body
          const request = args ? `\n\nApply the skill to: ${args}` : '\n\nApply the skill to the task at hand.'
          return `${renderSkill(skill, body)}${request}`
        },
      })
    },
  })
}

function renderCatalog(skills: readonly Skill[], maxDescriptionChars: number): string | undefined {
  if (skills.length === 0) return undefined
  const lines = skills.map((skill) => {
    const description =
      skill.description.length > maxDescriptionChars
        ? `${skill.description.slice(0, maxDescriptionChars - 1)}…`
        : skill.description
    return `- \`${skill.name}\`: ${description}`
  })
  return [
    '# Skills',
    'Skills hold instructions and files for particular tasks. When a task matches a skill below, call the `skill` tool with its name to load it before you start, then follow it.',
    lines.join('\n'),
  ].join('\n\n')
}

function renderSkill(skill: Skill, body: string): string {
  return [
    `<skill name="${skill.name}" folder="${skill.folder}">`,
    `The skill's supporting files are in ${skill.folder}; paths in its instructions are relative to that folder. Read them with the file tools when the instructions mention them.`,
    '',
    body.trim(),
    '</skill>',
  ].join('\n')
}
