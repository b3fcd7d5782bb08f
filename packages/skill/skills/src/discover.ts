import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { isPlainObject, splitFrontmatter } from '@dsh/loader/compose'
import { errorMessage } from '@dsh/tools'

export interface Skill {
  name: string
  description: string
  /** The skill's folder: supporting files live here. */
  folder: string
  /** Its SKILL.md. */
  file: string
}

/** A SKILL.md that was left out, and why. `key` changes when the file does, so a caller can report it once. */
export interface SkippedSkill {
  file: string
  why: string
  key: string
}

export interface Discovery {
  skills: Skill[]
  skipped: SkippedSkill[]
}

export interface ParsedSkill {
  name: string
  description: string
  body: string
}

export const SKILL_FILE = 'SKILL.md'
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/**
 * Splits a SKILL.md into its YAML frontmatter (`name`, `description`) and
 * body. Throws an error saying what is wrong, naming the file.
 */
export function parseSkill(text: string, file: string): ParsedSkill {
  const split = splitFrontmatter(text, file)
  if (!split)
    throw new Error(
      `${file} has no YAML frontmatter: it must start with a "---" line, then name and description, then "---"`,
    )
  const { data, body } = split
  if (!isPlainObject(data)) throw new Error(`${file}: the frontmatter must be a mapping with name and description`)
  const { name, description } = data
  if (typeof name !== 'string' || !name.trim()) throw new Error(`${file}: the frontmatter has no name`)
  if (!NAME.test(name.trim()))
    throw new Error(
      `${file}: name "${name}" must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit`,
    )
  if (typeof description !== 'string' || !description.trim())
    throw new Error(`${file}: the frontmatter has no description`)
  return { name: name.trim(), description: description.trim().replace(/\s+/g, ' '), body }
}

export interface DiscoverOptions {
  /** Folders holding skill folders, highest priority first; a name found in an earlier root wins. */
  roots: readonly string[]
  maxFileBytes: number
}

type Parsed = { ok: true; name: string; description: string } | { ok: false; why: string }

/**
 * Finds `<root>/<folder>/SKILL.md` in every root. Parsed frontmatter is kept
 * per file and reused while the file's size and mtime stay the same.
 */
export class SkillScanner {
  private readonly cache = new Map<string, { stamp: string; parsed: Parsed }>()

  discover(options: DiscoverOptions): Discovery {
    const skills: Skill[] = []
    const skipped: SkippedSkill[] = []
    const taken = new Map<string, Skill>()
    for (const root of options.roots) {
      for (const folder of skillFolders(root)) {
        const file = path.join(folder, SKILL_FILE)
        const stamp = fileStamp(file)
        if (!stamp) continue
        const parsed = this.parse(file, stamp, options.maxFileBytes)
        const key = `${file}:${stamp}`
        if (!parsed.ok) {
          skipped.push({ file, why: parsed.why, key })
          continue
        }
        const earlier = taken.get(parsed.name)
        if (earlier) {
          if (path.dirname(earlier.folder) === root)
            skipped.push({ file, why: `${file}: skill "${parsed.name}" is already defined by ${earlier.file}`, key })
          continue
        }
        const skill = { name: parsed.name, description: parsed.description, folder, file }
        taken.set(skill.name, skill)
        skills.push(skill)
      }
    }
    skills.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    return { skills, skipped }
  }

  private parse(file: string, stamp: string, maxFileBytes: number): Parsed {
    const cached = this.cache.get(file)
    if (cached?.stamp === stamp) return cached.parsed
    let parsed: Parsed
    try {
      const skill = parseSkill(readSkillFile(file, maxFileBytes), file)
      parsed = { ok: true, name: skill.name, description: skill.description }
    } catch (error) {
      parsed = { ok: false, why: errorMessage(error) }
    }
    this.cache.set(file, { stamp, parsed })
    return parsed
  }
}

/** Reads a SKILL.md as UTF-8 text; refuses files over the size limit. */
export function readSkillFile(file: string, maxFileBytes: number): string {
  const size = statSync(file).size
  if (size > maxFileBytes)
    throw new Error(`${file} has ${size} bytes, more than the ${maxFileBytes} a SKILL.md may have (maxFileBytes)`)
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(file))
  } catch {
    throw new Error(`${file} is not valid UTF-8 text`)
  }
}

function skillFolders(root: string): string[] {
  let entries: string[]
  try {
    entries = readdirSync(root).sort()
  } catch {
    return []
  }
  return entries.filter((entry) => !entry.startsWith('.')).map((entry) => path.join(root, entry))
}

/** Size and mtime of a regular file; undefined when it is missing or not a file. */
function fileStamp(file: string): string | undefined {
  try {
    const stat = statSync(file)
    return stat.isFile() ? `${stat.size}:${stat.mtimeMs}` : undefined
  } catch {
    return undefined
  }
}
