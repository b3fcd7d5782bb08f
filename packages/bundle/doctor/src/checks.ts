import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Context } from '@dsh/cordis'
import type {} from '@dsh/agent'
import type {} from '@dsh/commands'
import type {} from '@dsh/credentials'
import type {} from '@dsh/hooks'
import type {} from '@dsh/llm'
import type {} from '@dsh/loader'
import type {} from '@dsh/mcp'
import type {} from '@dsh/sandbox'
import type {} from '@dsh/subprocess'
import { projectFolders } from '@dsh/system-prompt'
import { errorMessage } from '@dsh/tools'
import type {} from '@dsh/workspace-trust'

export type CheckStatus = 'ok' | 'warn' | 'fail'

/** One line of the report: what was looked at, what was found, and how to fix a problem. */
export interface Check {
  name: string
  status: CheckStatus
  summary: string
  /** Files, folders and names found, each with where it came from. */
  found?: string[]
  fix?: string
}

/** The oldest Node dsh supports (DESIGN: >= 20.19). */
export const MIN_NODE = [20, 19] as const

/** The live config of a row, as the loader evaluated it; undefined when the row is not mounted. */
function rowConfig(ctx: Context, id: string): Record<string, unknown> | undefined {
  const config = ctx.get('loader')?.fiberOf(id)?.config
  return config && typeof config === 'object' ? (config as Record<string, unknown>) : undefined
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
}

function expandHome(file: string): string {
  return file === '~' || file.startsWith('~/') ? path.join(os.homedir(), file.slice(1)) : file
}

/** How to install a Debian package here: directly as root, else through sudo. */
export function installCommand(debianPackage: string): string {
  const prefix = process.getuid?.() === 0 ? '' : 'sudo '
  return `${prefix}apt-get install -y ${debianPackage}`
}

/** The first executable file named `program` on PATH (or the path itself when it has a slash). */
export function findProgram(program: string, pathVariable = process.env.PATH ?? ''): string | undefined {
  const candidates = program.includes('/')
    ? [program]
    : pathVariable
        .split(':')
        .filter(Boolean)
        .map((dir) => path.join(dir, program))
  return candidates.find((file) => {
    try {
      return statSync(file).isFile() && (statSync(file).mode & 0o111) !== 0
    } catch {
      return false
    }
  })
}

export function nodeCheck(version = process.versions.node): Check {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  const ok = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])
  return {
    name: 'node',
    status: ok ? 'ok' : 'fail',
    summary: `Node ${version}${ok ? '' : `; dsh needs ${MIN_NODE.join('.')} or newer`}`,
    ...(ok ? {} : { fix: `install Node ${MIN_NODE.join('.')} or newer (20.x LTS)` }),
  }
}

export function rowsCheck(ctx: Context): Check {
  const health = ctx.get('loader')?.health()
  const failed = health?.failed ?? []
  return {
    name: 'plugins',
    status: failed.length ? 'fail' : 'ok',
    summary: failed.length ? `${failed.length} row(s) failed to start` : 'every row started',
    ...(failed.length ? { found: failed.map((row) => `${row.id}: ${row.message}`) } : {}),
  }
}

/** Every key reference (`apiKeyEnv`, `compatibleKeyEnv`) in the live config of a row, with the row's id. */
function keyReferences(ctx: Context): Map<string, string[]> {
  const names = new Map<string, string[]>()
  const visit = (value: unknown, row: string) => {
    if (Array.isArray(value)) for (const item of value) visit(item, row)
    else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if ((key === 'apiKeyEnv' || key === 'compatibleKeyEnv') && typeof item === 'string' && item) {
          names.set(item, [...(names.get(item) ?? []), row])
        } else visit(item, row)
      }
    }
  }
  for (const row of ctx.get('loader')?.rows() ?? []) visit(rowConfig(ctx, row.id), row.id)
  return names
}

/** The key reference the model route sends, read from the live config of the row serving it. */
function routeKeyName(ctx: Context, route: string): string | undefined {
  if (route === 'deepseek') return rowConfig(ctx, 'llm-deepseek')?.apiKeyEnv as string | undefined
  const piAi = rowConfig(ctx, 'llm-pi-ai')
  const providers = piAi?.providers as Record<string, { apiKeyEnv?: string }> | undefined
  if (providers?.[route]?.apiKeyEnv) return providers[route].apiKeyEnv
  if (route === 'openai-compatible' && typeof piAi?.compatibleKeyEnv === 'string') return piAi.compatibleKeyEnv
  return undefined
}

/** Routes that send requests without a key when none is set (local OpenAI-compatible servers). */
const KEY_OPTIONAL = new Set(['openai-compatible'])

export function credentialsCheck(ctx: Context): Check {
  const credentials = ctx.get('credentials')
  if (!credentials)
    return { name: 'credentials', status: 'warn', summary: 'no credentials row: keys come from the environment only' }
  const found: string[] = []
  let set = 0
  for (const [name, rows] of [...keyReferences(ctx)].sort(([a], [b]) => a.localeCompare(b))) {
    const hit = credentials.lookup(name)
    if (hit) set += 1
    found.push(`${name}: ${hit ? `set (${hit.source})` : 'not set'} (used by ${rows.join(', ')})`)
  }
  return { name: 'credentials', status: 'ok', summary: `${set} of ${found.length} key references set`, found }
}

export function modelCheck(ctx: Context): Check {
  const agents = ctx.get('agents')
  const llm = ctx.get('llm')
  if (!agents || !llm) return { name: 'model', status: 'fail', summary: 'no agent or model registry in this profile' }
  let defaults: { provider: string; model: string }
  try {
    defaults = agents.defaults()
  } catch (error) {
    return { name: 'model', status: 'fail', summary: errorMessage(error) }
  }
  const settings = agents.settingsFile()
  const where = `${defaults.provider} / ${defaults.model}${settings ? ` (agent row, then ${settings})` : ''}`
  const routes = llm.listRoutes()
  if (!routes.includes(defaults.provider))
    return {
      name: 'model',
      status: 'fail',
      summary: `route "${defaults.provider}" is not served here (routes: ${routes.join(', ') || 'none'})`,
      fix: 'choose a served route with --provider, DSH_PROVIDER or the web settings',
    }
  const keyName = routeKeyName(ctx, defaults.provider)
  const credentials = ctx.get('credentials')
  const hit = keyName ? credentials?.lookup(keyName) : undefined
  if (keyName && !hit && !KEY_OPTIONAL.has(defaults.provider)) {
    return {
      name: 'model',
      status: 'fail',
      summary: `${where}: the key ${keyName} is not set`,
      fix: credentials?.places(keyName) ?? `set ${keyName} in the environment`,
    }
  }
  return {
    name: 'model',
    status: 'ok',
    summary: `${where}${keyName ? `, key ${keyName} ${hit ? `from ${hit.source}` : 'not set (optional)'}` : ''}`,
  }
}

/** AGENTS.md (or CLAUDE.md where none) from the user's file down to the workspace, as the instructions row reads them. */
export function instructionsCheck(ctx: Context, cwd: string): Check {
  const config = rowConfig(ctx, 'instructions')
  if (!config) return { name: 'instructions', status: 'warn', summary: 'the instructions row is not running' }
  const found: string[] = []
  const homeFile = typeof config.homeFile === 'string' ? config.homeFile : ''
  if (homeFile && existsSync(homeFile)) found.push(`${homeFile} (user)`)
  const names = strings(config.fileNames)
  const fallback = strings(config.fallbackFileNames)
  for (const folder of projectFolders(cwd).folders) {
    const primary = names.map((name) => path.join(folder, name)).filter((file) => existsSync(file))
    const files = primary.length
      ? primary
      : fallback.map((name) => path.join(folder, name)).filter((file) => existsSync(file))
    for (const file of files) found.push(`${file} (project${primary.length ? '' : ', fallback'})`)
  }
  return { name: 'instructions', status: 'ok', summary: `${found.length} file(s)`, found }
}

/** The roots of a row (`roots` config) that exist, relative ones against the project root. */
function existingRoots(ctx: Context, id: string, cwd: string): { roots: string[]; running: boolean } {
  const config = rowConfig(ctx, id)
  const base = projectFolders(cwd).root ?? cwd
  const roots = strings(config?.roots)
    .map((root) => expandHome(root))
    .map((root) => (path.isAbsolute(root) ? root : path.join(base, root)))
    .filter((root) => existsSync(root))
  return { roots, running: config !== undefined }
}

export function skillsCheck(ctx: Context, cwd: string): Check {
  const { roots, running } = existingRoots(ctx, 'skills', cwd)
  if (!running) return { name: 'skills', status: 'warn', summary: 'the skills row is not running' }
  const found = roots.map((root) => {
    let count = 0
    try {
      count = readdirSync(root).filter((entry) => existsSync(path.join(root, entry, 'SKILL.md'))).length
    } catch {}
    return `${root} (${count} skill(s))`
  })
  return { name: 'skills', status: 'ok', summary: `${roots.length} folder(s)`, found }
}

export function commandsCheck(ctx: Context, cwd: string): Check {
  const { roots, running } = existingRoots(ctx, 'commands', cwd)
  const commands = ctx.get('commands')
  if (!running || !commands) return { name: 'commands', status: 'warn', summary: 'the commands row is not running' }
  const names = commands.list(cwd).map((command) => `/${command.name}`)
  return {
    name: 'commands',
    status: 'ok',
    summary: `${names.length} command(s)${names.length ? `: ${names.join(' ')}` : ''}`,
    found: roots.map((root) => `${root} (folder)`),
  }
}

export function hooksCheck(ctx: Context, cwd: string): Check {
  const hooks = ctx.get('hooks')
  if (!hooks) return { name: 'hooks', status: 'warn', summary: 'the hooks row is not running' }
  const { projectDir, files } = hooks.files(cwd)
  const trusted = ctx.get('workspaceTrust')?.isTrusted(projectDir) ?? false
  return {
    name: 'hooks',
    status: 'ok',
    summary: `${files.length} file(s)`,
    found: files.map(
      (file) =>
        `${file.file} (${file.flavor}, ${file.scope}${file.scope === 'project' && !trusted ? ', not run: folder not trusted' : ''})`,
    ),
  }
}

export function mcpCheck(ctx: Context, cwd: string): Check {
  const config = rowConfig(ctx, 'mcp-config-files')
  const found: string[] = []
  let status: CheckStatus = 'ok'
  if (config && typeof config.projectFile === 'string' && config.projectFile) {
    const folder = typeof config.folder === 'string' && config.folder ? config.folder : cwd
    const file = path.resolve(folder, config.projectFile)
    if (existsSync(file)) {
      const trusted = ctx.get('workspaceTrust')?.isTrusted(folder) ?? false
      try {
        const servers = Object.keys(
          (JSON.parse(readFileSync(file, 'utf8')) as { mcpServers?: object }).mcpServers ?? {},
        )
        found.push(
          `${file} (project; servers: ${servers.join(', ') || 'none'}${trusted ? '' : '; not started: folder not trusted'})`,
        )
      } catch (error) {
        status = 'warn'
        found.push(`${file} (project; unreadable: ${errorMessage(error)})`)
      }
    }
  }
  for (const file of strings(config?.files)) found.push(`${path.resolve(cwd, file)} (--mcp-config)`)
  const running = ctx.get('mcp')?.list() ?? []
  for (const server of running) found.push(`server ${server.name} (${server.status})`)
  return { name: 'mcp', status, summary: `${found.length} file(s) and server(s)`, found }
}

export function trustCheck(ctx: Context, cwd: string): Check {
  const trust = ctx.get('workspaceTrust')
  if (!trust) return { name: 'workspace trust', status: 'warn', summary: 'the workspace-trust row is not running' }
  const folder = trust.folderOf(cwd)
  const trusted = trust.isTrusted(folder)
  return {
    name: 'workspace trust',
    status: 'ok',
    summary: `${folder} is ${trusted ? 'trusted' : 'not trusted: its .mcp.json servers and project hooks do not run'}`,
  }
}

/** The sandbox provider's self-check, then one trivial command confined read-only through ctx.subprocess. */
export async function sandboxCheck(ctx: Context, cwd: string): Promise<Check> {
  const sandbox = ctx.get('sandbox')
  const subprocess = ctx.get('subprocess')
  const fix = `install bubblewrap: ${installCommand('bubblewrap')}`
  if (!sandbox || !subprocess)
    return { name: 'sandbox', status: 'fail', summary: 'no sandbox or subprocess row: commands cannot be confined' }
  const available = await sandbox.available()
  if (!available.ok) return { name: 'sandbox', status: 'fail', summary: available.reason, fix }
  const policy = { mode: 'read-only' as const, writableRoots: [], protectedPaths: [], network: 'off' as const }
  const wrapped = await sandbox.wrap(['/bin/sh', '-c', 'echo confined'], policy, cwd)
  if ('refused' in wrapped) return { name: 'sandbox', status: 'fail', summary: wrapped.refused, fix }
  try {
    const handle = subprocess.run({ argv: wrapped.argv, cwd, timeoutMs: 30_000 })
    let output = ''
    handle.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()))
    handle.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString()))
    const exit = await handle.done
    if (exit.code !== 0 || !output.includes('confined'))
      return {
        name: 'sandbox',
        status: 'fail',
        summary: `a confined command failed (exit ${exit.code ?? exit.signal}): ${output.trim().slice(0, 300)}`,
        fix,
      }
  } catch (error) {
    return { name: 'sandbox', status: 'fail', summary: errorMessage(error), fix }
  } finally {
    wrapped.release?.()
  }
  return { name: 'sandbox', status: 'ok', summary: 'bwrap confines commands (a read-only command ran)' }
}

export function slirpCheck(ctx: Context): Check {
  const config = rowConfig(ctx, 'sandbox-network')
  if (!config) return { name: 'slirp4netns', status: 'warn', summary: 'the sandbox-network row is not running' }
  const program = typeof config.slirp4netnsPath === 'string' ? config.slirp4netnsPath : 'slirp4netns'
  const found = findProgram(program)
  return found
    ? { name: 'slirp4netns', status: 'ok', summary: found }
    : {
        name: 'slirp4netns',
        status: 'warn',
        summary: `${program} not found: sandboxed commands cannot use network "on" (off and proxy still work)`,
        fix: installCommand('slirp4netns'),
      }
}
