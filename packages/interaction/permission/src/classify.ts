import path from 'node:path'
import { assertNever } from '@dsh/cordis'
import { recordChecked } from '@dsh/fs'
import { PROTECTED_PROJECT_NAMES, protectedProjectPaths } from '@dsh/sandbox'
import type { ToolAccess, ToolExecution } from '@dsh/tools'
import { isWithin, realFolder, resolveReal } from './paths.ts'
import type { PermissionPreset } from './types.ts'

/** The folders a session may write under workspace-write, all symlink-resolved. */
export interface WriteScope {
  workspace: string
  /** The session's own temp folder (never the shared /tmp). */
  temp: string
  /** Every writable root: the workspace, the temp folder, then the extra roots. */
  roots: string[]
  /**
   * Read-only paths inside the roots: in the workspace and each extra root,
   * `.git` (and the git dir a `.git` file names), `.dsh`, `.claude`, `.codex`,
   * `.agents` and `.mcp.json`.
   */
  protectedPaths: string[]
}

/** Extra roots may be relative; they resolve against the session's cwd. `temp` is the session's temp folder. */
export function writeScope(cwd: string, extraRoots: readonly string[], temp: string): WriteScope {
  const workspace = realFolder(path.resolve(cwd))
  const realTemp = realFolder(temp)
  const projects = [workspace]
  for (const extra of extraRoots) {
    const root = realFolder(path.resolve(workspace, extra))
    if (!projects.includes(root) && root !== realTemp) projects.push(root)
  }
  const roots = [workspace, realTemp, ...projects.slice(1)]
  const protectedPaths = [...new Set(projects.flatMap((root) => protectedProjectPaths(root)))]
  return { workspace, temp: realTemp, roots, protectedPaths }
}

/**
 * Where a call stands against the preset. Outside, it carries a reason the
 * model and the user can read (tool, path or command, preset), what the model
 * can do instead, and `scope`: the kind of action an `allow-session` answer
 * covers (this tool, this category of access).
 */
export type Verdict =
  | { inside: true }
  | {
      inside: false
      reason: string
      advice: string
      scope: string
      /**
       * Whether an allow rule may answer for the user: only when running the
       * call widens neither the sandbox of commands nor the preset's file
       * boundaries (a network tool, an MCP tool, an undeclared tool), never
       * for writes, escalated commands or an access that could not be read.
       */
      ruleMayAllow: boolean
    }

export interface ClassifyOptions {
  preset: PermissionPreset
  network: boolean
  extraWritableRoots: readonly string[]
  /** The session's temp folder, writable under workspace-write (made on first use). */
  temp: () => string
}

const INSIDE: Verdict = { inside: true }

/** What the call touches: the tool's own `access(args)`, else `read` for read-only tools and `other` for the rest. */
export function accessOf(execution: ToolExecution): ToolAccess | { error: string } {
  const { tool, args } = execution
  if (typeof tool.access !== 'function') return { kind: tool.readOnly === true ? 'read' : 'other' }
  try {
    const access = tool.access(args)
    if (access === null || typeof access !== 'object' || !KINDS.has(access.kind)) {
      return { error: `access() returned ${JSON.stringify(access)}, not a ToolAccess` }
    }
    return access
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) }
  }
}

const KINDS = new Set<string>(['read', 'write', 'execute', 'network', 'other'])

export async function classify(execution: ToolExecution, options: ClassifyOptions): Promise<Verdict> {
  const { preset } = options
  if (preset === 'danger-full-access') return INSIDE
  const tool = execution.tool.name
  const access = accessOf(execution)
  if ('error' in access) {
    return {
      inside: false,
      reason: `tool "${tool}" could not say what it would touch (${access.error}), so preset "${preset}" cannot allow it`,
      advice: 'Tell the user what you need.',
      scope: `${tool}\u0000unknown`,
      ruleMayAllow: false,
    }
  }
  const detail = access.summary?.trim() ? ` (${access.summary.trim()})` : ''
  if (access.escalated === true) {
    const what =
      access.kind === 'execute'
        ? `asks to run ${access.summary?.trim() ? JSON.stringify(access.summary.trim()) : 'a command'} outside the sandbox`
        : `asks for escalated ${access.kind} access${detail}`
    return {
      inside: false,
      reason: `tool "${tool}" ${what}, which preset "${preset}" does not allow`,
      advice: 'Do it inside the sandbox (without escalation) instead, or tell the user what you need and why.',
      scope: `${tool}\u0000escalated-${access.kind}`,
      ruleMayAllow: access.kind !== 'execute' && access.kind !== 'write',
    }
  }
  switch (access.kind) {
    case 'read':
    case 'execute':
      // Reads are never restricted; a plain command runs confined by the sandbox this preset sets up.
      return INSIDE
    case 'network':
      if (options.network) return INSIDE
      return {
        inside: false,
        reason: `tool "${tool}" needs network access${detail}, which preset "${preset}" does not allow (the network is off in this deployment)`,
        advice: 'Continue without the network, or tell the user what you need.',
        scope: `${tool}\u0000network`,
        ruleMayAllow: true,
      }
    case 'other':
      if (preset !== 'read-only') return INSIDE
      return {
        inside: false,
        reason: `tool "${tool}" does not declare what it touches, so preset "read-only" cannot count it as a read`,
        advice: READ_ONLY_ADVICE,
        scope: `${tool}\u0000other`,
        ruleMayAllow: true,
      }
    case 'write':
      return classifyWrite(execution, access, options)
    default:
      return assertNever(access.kind, 'tool access kind')
  }
}

const READ_ONLY_ADVICE =
  'This session is read-only: use read-only tools, tell the user what you would change, or ask them to switch to a writable preset.'

async function classifyWrite(execution: ToolExecution, access: ToolAccess, options: ClassifyOptions): Promise<Verdict> {
  const tool = execution.tool.name
  const { cwd } = execution.run
  const paths = (access.paths ?? []).filter((p): p is string => typeof p === 'string')
  if (options.preset === 'read-only') {
    const where = paths.length ? ` ${listed(paths.map((p) => path.resolve(cwd, p)))}` : ''
    return {
      inside: false,
      reason: `tool "${tool}" would write${where}, but preset "read-only" allows no writes`,
      advice: READ_ONLY_ADVICE,
      scope: `${tool}\u0000write`,
      ruleMayAllow: false,
    }
  }
  const scope = writeScope(cwd, options.extraWritableRoots, options.temp())
  if (paths.length === 0) {
    return {
      inside: false,
      reason: `tool "${tool}" would write without saying where, so preset "workspace-write" cannot confirm it stays inside ${scope.workspace}`,
      advice: `Write inside the workspace (${scope.workspace}) with a tool that names its paths, or ask the user.`,
      scope: `${tool}\u0000write-unknown`,
      ruleMayAllow: false,
    }
  }
  const outside: string[] = []
  const guarded: string[] = []
  const hit = new Set<string>()
  const { protectedPaths } = scope
  for (const given of paths) {
    const lexical = path.resolve(cwd, given)
    const real = await resolveReal(lexical)
    if (real === undefined) {
      outside.push(`${lexical} (a symlink loop)`)
      continue
    }
    // The file tools act on exactly this location, or fail: a path swapped after this check is not followed.
    recordChecked(execution.run.sessionState, execution.run.callId, lexical, real)
    const shown = real === lexical ? lexical : `${lexical} (which resolves to ${real})`
    if (!scope.roots.some((root) => isWithin(root, real))) outside.push(shown)
    // A symlink planted in place of a protected path counts as that path.
    else {
      const guard = protectedPaths.find((folder) => isWithin(folder, real) || isWithin(folder, lexical))
      if (guard !== undefined) {
        guarded.push(shown)
        hit.add(guard)
      }
    }
  }
  if (outside.length) {
    return {
      inside: false,
      reason: `tool "${tool}" would write ${listed(outside)}, outside the folders preset "workspace-write" allows (${scope.roots.join(', ')})`,
      advice: `Write inside the workspace (${scope.workspace}) or the temp dir (${scope.temp}) instead, or ask the user to do it.`,
      scope: `${tool}\u0000write-outside${guarded.length ? '+protected' : ''}`,
      ruleMayAllow: false,
    }
  }
  if (guarded.length) {
    return {
      inside: false,
      reason:
        `tool "${tool}" would write ${listed(guarded)}, inside the protected path ${[...hit].join(', ')} ` +
        `(${PROTECTED_PROJECT_NAMES.join(', ')}: files that make something run outside the sandbox later), ` +
        'which preset "workspace-write" keeps read-only',
      advice: 'Do not change these paths yourself; ask the user to make this change, or to approve it.',
      scope: `${tool}\u0000write-protected`,
      ruleMayAllow: false,
    }
  }
  return INSIDE
}

function listed(items: readonly string[]): string {
  if (items.length <= 3) return items.join(', ')
  return `${items.slice(0, 3).join(', ')} and ${items.length - 3} more`
}
