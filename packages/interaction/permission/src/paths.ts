import { lstat, readlink, realpath } from 'node:fs/promises'
import { realpathSync } from 'node:fs'
import path from 'node:path'

/** How many symlinks one path may pass through before it counts as a loop (Linux's own limit). */
const MAX_LINKS = 40

/**
 * Where an absolute path really leads: the `realpath` of its longest existing
 * prefix with the missing rest appended. A symlink at the end that points at
 * something missing (a dangling link, which a write would follow and create)
 * is followed too. Undefined when the links loop.
 */
export async function resolveReal(target: string, hops = 0): Promise<string | undefined> {
  try {
    return await realpath(target)
  } catch {
    // Missing, or a dangling or looping link somewhere: walk up.
  }
  const parent = path.dirname(target)
  if (parent === target) return target
  const realParent = await resolveReal(parent, hops)
  if (realParent === undefined) return undefined
  const candidate = path.join(realParent, path.basename(target))
  let link: string | undefined
  try {
    if ((await lstat(candidate)).isSymbolicLink()) link = await readlink(candidate)
  } catch {
    // Does not exist (or cannot be inspected): it is created where it is written.
  }
  if (link === undefined) return candidate
  if (hops >= MAX_LINKS) return undefined
  return resolveReal(path.resolve(realParent, link), hops + 1)
}

/** `realpath` when the folder exists, else the normalized absolute path. */
export function realFolder(folder: string): string {
  try {
    return realpathSync(folder)
  } catch {
    return path.resolve(folder)
  }
}

/** True when `target` is `root` or lies below it. Both absolute and normalized. */
export function isWithin(root: string, target: string): boolean {
  const rel = path.relative(root, target)
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel))
}
