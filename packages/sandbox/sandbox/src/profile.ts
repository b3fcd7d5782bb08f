import { lstat, readdir, realpath } from 'node:fs/promises'
import path from 'node:path'
import type { NetworkAttachment, SandboxPolicy } from './seam.ts'

/** The file descriptor bwrap reads the seccomp filter from. */
export const SECCOMP_FD = 3

/** What the provider hides inside every sandbox, from its config. */
export interface HiddenPaths {
  /** Folders or files replaced by an empty read-only node, unless the command's workspace lies inside them. */
  paths: readonly string[]
  /** Files always replaced by an empty node; a `*` segment matches any one name. */
  secretFiles: readonly string[]
}

/** Where a protected path stands before the command starts. */
export interface ProtectedPathState {
  path: string
  state: 'exists' | 'missing' | 'symlink' | 'unreachable'
}

/**
 * The bwrap options (everything before `--`) for a confined policy, once every
 * protected path exists. In order: a user namespace with no capabilities (so
 * the inherited mounts are locked, also for root), the host read-only, a fresh
 * /dev and /proc, a private /tmp, the writable roots bound back (parents
 * first), the protected paths read-only over them, the hidden paths masked,
 * the network unshared (or, with an attachment, its settings), and the
 * seccomp filter on fd 3. `roots`: the policy's `writableRoots()`, when the
 * caller has them already.
 */
export async function bwrapArguments(
  policy: SandboxPolicy,
  cwd: string,
  hidden: HiddenPaths,
  network?: NetworkAttachment,
  roots?: string[],
): Promise<string[]> {
  const args = ['--unshare-user', '--disable-userns', '--cap-drop', 'ALL']
  args.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp')
  roots ??= await writableRoots(policy)
  const dir = await canonical(cwd)
  // The private /tmp hides the host's; a working directory there must stay visible.
  if (!roots.some((root) => within(dir, root))) args.push('--ro-bind-try', dir, dir)
  for (const item of unique((policy.readableRoots ?? []).map((item) => path.resolve(item)))) {
    if (!roots.some((root) => within(item, root))) args.push('--ro-bind-try', item, item)
  }
  for (const root of roots) args.push('--bind-try', root, root)
  if (policy.mode === 'workspace-write') {
    for (const item of byDepth(unique(policy.protectedPaths.map((item) => path.resolve(item))))) {
      args.push('--ro-bind-try', item, item)
    }
  }
  for (const [item, kind] of await hiddenNodes(hidden, [dir, ...roots])) {
    if (kind === 'folder') args.push('--tmpfs', item, '--remount-ro', item)
    else args.push('--ro-bind', '/dev/null', item)
  }
  // Without an attachment the command gets a network namespace of its own with only loopback.
  if (!network) args.push('--unshare-net')
  else {
    for (const [name, value] of Object.entries(network.env)) args.push('--setenv', name, value)
    if (network.resolvConf) args.push('--ro-bind', network.resolvConf, '/etc/resolv.conf')
  }
  args.push('--unshare-pid', '--unshare-ipc', '--die-with-parent', '--new-session')
  args.push('--setenv', 'TMPDIR', policy.tempDir ?? '/tmp')
  args.push('--seccomp', String(SECCOMP_FD), '--chdir', cwd)
  return args
}

/**
 * The options for mode `off`: no confinement at all, only a private PID
 * namespace, so that every process the command starts (`nohup setsid … &`
 * included) ends when the command's process tree is stopped.
 */
export function reaperArguments(cwd: string, asRoot: boolean, interactive: boolean): string[] {
  const args = asRoot ? [] : ['--unshare-user']
  args.push('--dev-bind', '/', '/', '--proc', '/proc', '--unshare-pid', '--die-with-parent')
  // A session of its own keeps the namespace's init out of the caller's process group (bwrap leaves it
  // to be reaped by the host's init); an interactive command keeps the terminal it was started on.
  if (!interactive) args.push('--new-session')
  args.push('--chdir', cwd)
  return args
}

/** Where each protected path stands (`roots`: the policy's `writableRoots()`); a symlink in its place is reported, never followed. */
export async function protectedPathStates(policy: SandboxPolicy, roots: string[]): Promise<ProtectedPathState[]> {
  if (policy.mode !== 'workspace-write') return []
  const states: ProtectedPathState[] = []
  for (const item of unique(policy.protectedPaths.map((entry) => path.resolve(entry)))) {
    let state: ProtectedPathState['state']
    try {
      state = (await lstat(item)).isSymbolicLink() ? 'symlink' : 'exists'
    } catch {
      // A missing path matters only where the command could create it.
      const parent = path.dirname(item)
      const parentExists = await lstat(parent).then(
        (info) => info.isDirectory(),
        () => false,
      )
      state = parentExists && roots.some((root) => within(item, root)) ? 'missing' : 'unreachable'
    }
    states.push({ path: item, state })
  }
  return states
}

/** The writable roots of a policy, canonical, parents first (none outside workspace-write). */
export async function writableRoots(policy: SandboxPolicy): Promise<string[]> {
  if (policy.mode !== 'workspace-write') return []
  return byDepth(unique(await Promise.all(policy.writableRoots.map(canonical))))
}

/** The hidden paths that exist, with their kind, minus folders that hold the workspace or a writable root. */
async function hiddenNodes(hidden: HiddenPaths, inUse: string[]): Promise<Map<string, 'folder' | 'file'>> {
  const nodes = new Map<string, 'folder' | 'file'>()
  for (const item of hidden.paths) {
    const real = await canonical(item)
    const kind = await kindOf(real)
    if (!kind) continue
    if (kind === 'folder' && inUse.some((used) => within(used, real))) continue
    nodes.set(real, kind)
  }
  for (const pattern of hidden.secretFiles) {
    for (const match of await expand(pattern)) {
      const real = await canonical(match)
      if ((await kindOf(real)) === 'file' && ![...nodes.keys()].some((folder) => within(real, folder))) {
        nodes.set(real, 'file')
      }
    }
  }
  return nodes
}

async function kindOf(item: string): Promise<'folder' | 'file' | undefined> {
  try {
    const info = await lstat(item)
    if (info.isDirectory()) return 'folder'
    return info.isSymbolicLink() ? undefined : 'file'
  } catch {
    return undefined
  }
}

/** The existing paths a pattern names; `*` stands for one whole path segment. */
async function expand(pattern: string): Promise<string[]> {
  const segments = path.resolve(pattern).split(path.sep).slice(1)
  let found = ['/']
  for (const segment of segments) {
    const next: string[] = []
    for (const base of found) {
      if (segment !== '*') next.push(path.join(base, segment))
      else next.push(...(await readdir(base).catch(() => [] as string[])).map((name) => path.join(base, name)))
    }
    found = next
  }
  return found
}

/** The real path when it exists, else the normalized path. */
async function canonical(item: string): Promise<string> {
  try {
    return await realpath(item)
  } catch {
    return path.resolve(item)
  }
}

export function within(item: string, root: string): boolean {
  const relative = path.relative(root, item)
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative))
}

function unique(items: string[]): string[] {
  return [...new Set(items)]
}

function byDepth(items: string[]): string[] {
  return [...items].sort((a, b) => a.split(path.sep).length - b.split(path.sep).length || (a < b ? -1 : a > b ? 1 : 0))
}
