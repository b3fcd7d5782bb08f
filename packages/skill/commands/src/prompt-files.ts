import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs'
import path from 'node:path'
import { isPlainObject, splitFrontmatter } from '@dsh/loader/compose'

/** A Markdown prompt file callable as `/name args`. */
export interface PromptFile {
  name: string
  description: string
  argumentHint?: string
  file: string
  /** The folder it was found in (a root, not the subfolder). */
  root: string
  /** Where it was found, as users of Claude Code know it: `project`, `user`, `project:frontend`. */
  scope: string
}

export interface PromptRoot {
  folder: string
  /** `project` or `user`; a subfolder adds `:<subfolder>`. */
  scope: string
}

export interface SkippedPromptFile {
  file: string
  why: string
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
const MAX_DEPTH = 3
const DESCRIPTION_CHARS = 120

/**
 * Finds `*.md` in every root and its subfolders (a subfolder only names the
 * scope: `frontend/component.md` is `/component`). The first root holding a
 * name wins. A file whose real location leaves its root (a symlink a cloned
 * repository planted to a secret elsewhere) is skipped.
 */
export function discoverPromptFiles(
  roots: readonly PromptRoot[],
  maxFileBytes: number,
): { commands: PromptFile[]; skipped: SkippedPromptFile[] } {
  const commands: PromptFile[] = []
  const skipped: SkippedPromptFile[] = []
  const taken = new Set<string>()
  for (const root of roots) {
    let realRoot: string
    try {
      realRoot = realpathSync(root.folder)
    } catch {
      continue
    }
    for (const { file, subfolder } of markdownFiles(root.folder, '', 0)) {
      const name = path.basename(file, '.md')
      if (!NAME.test(name)) {
        skipped.push({ file, why: `"${name}" is not a command name (letters, digits, ".", "_", "-")` })
        continue
      }
      if (taken.has(name)) continue
      try {
        const parsed = readPromptFile(file, realRoot, maxFileBytes)
        taken.add(name)
        const scope = subfolder ? `${root.scope}:${subfolder}` : root.scope
        commands.push({
          name,
          description: parsed.description,
          ...(parsed.argumentHint ? { argumentHint: parsed.argumentHint } : {}),
          file,
          root: root.folder,
          scope,
        })
      } catch (error) {
        skipped.push({ file, why: error instanceof Error ? error.message : String(error) })
      }
    }
  }
  return { commands, skipped }
}

export interface ParsedPromptFile {
  description: string
  argumentHint?: string
  body: string
}

/**
 * Reads and parses one prompt file: optional frontmatter (`description`,
 * `argument-hint`), then the prompt. Without a description, the body's first
 * line stands in. Throws an error naming the file.
 */
export function readPromptFile(file: string, realRoot: string, maxFileBytes: number): ParsedPromptFile {
  const real = realpathSync(file)
  if (real !== realRoot && !real.startsWith(realRoot + path.sep))
    throw new Error(`${file} leads outside ${realRoot} (to ${real}); a command file must live in its folder`)
  const info = statSync(real)
  if (!info.isFile()) throw new Error(`${file} is not a regular file`)
  if (info.size > maxFileBytes)
    throw new Error(`${file} has ${info.size} bytes, more than the ${maxFileBytes} a command file may have`)
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(real))
  } catch {
    throw new Error(`${file} is not valid UTF-8 text`)
  }
  const split = splitFrontmatter(text, file)
  const data = split && isPlainObject(split.data) ? split.data : {}
  const body = split ? split.body : text
  const given = typeof data.description === 'string' ? data.description : ''
  const firstLine =
    body
      .split('\n')
      .find((line) => line.trim())
      ?.replace(/^#+\s*/, '') ?? ''
  const description = (given.trim() || firstLine.trim()).replace(/\s+/g, ' ').slice(0, DESCRIPTION_CHARS)
  const hint = data['argument-hint']
  return {
    description: description || path.basename(file, '.md'),
    ...(typeof hint === 'string' && hint.trim() ? { argumentHint: hint.trim() } : {}),
    body,
  }
}

function* markdownFiles(
  folder: string,
  subfolder: string,
  depth: number,
): Generator<{ file: string; subfolder: string }> {
  let entries: import('node:fs').Dirent[]
  try {
    entries = readdirSync(folder, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))
  } catch {
    return
  }
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue
    const full = path.join(folder, entry.name)
    if (entry.isDirectory()) {
      if (depth < MAX_DEPTH)
        yield* markdownFiles(full, subfolder ? `${subfolder}:${entry.name}` : entry.name, depth + 1)
    } else if (entry.name.endsWith('.md') && (entry.isFile() || entry.isSymbolicLink())) {
      yield { file: full, subfolder }
    }
  }
}

/**
 * Fills a prompt's placeholders as Claude Code does: `$ARGUMENTS` is all the
 * arguments, `$1`…`$9` the positional ones (quotes group words). A prompt
 * without placeholders gets the arguments appended, so none are lost.
 */
export function fillArguments(body: string, args: string): string {
  const positional = splitArguments(args)
  let used = false
  const filled = body.replace(/\$(ARGUMENTS|[1-9])/g, (_whole, key: string) => {
    used = true
    return key === 'ARGUMENTS' ? args : (positional[Number(key) - 1] ?? '')
  })
  if (used || !args) return filled
  return `${filled.replace(/\s+$/, '')}\n\nARGUMENTS: ${args}`
}

export function splitArguments(args: string): string[] {
  const words: string[] = []
  for (const match of args.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) words.push(match[1] ?? match[2] ?? match[3] ?? '')
  return words
}
