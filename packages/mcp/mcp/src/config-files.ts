import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { type Context, Schema, stringList, stringValue } from '@dsh/cordis'
import { errorMessage, untilAborted } from '@dsh/tools'
import { checkServer, type McpServerConfig } from './config.ts'
import type {} from '@dsh/workspace-trust'
import type {} from './service.ts'

/**
 * MCP servers from the files users already have: a project's `.mcp.json`
 * (Claude Code's format, started only in a folder the user trusted) and the
 * files named with `--mcp-config` (started as given: the user named them).
 */
export interface McpConfigFilesConfig {
  projectFile: string
  files: string[]
  folder: string
}

export const Config: Schema<McpConfigFilesConfig> = Schema.object({
  projectFile: stringValue(
    "The project's MCP file, relative to the folder dsh was started in; its servers start only once that folder is trusted. Empty: not read.",
    '.mcp.json',
  ),
  files: stringList('More MCP files whose servers always start (headless --mcp-config), relative to the folder.'),
  folder: stringValue('The project folder; the current directory when empty.'),
})

export interface McpFileServers {
  file: string
  servers: Record<string, McpServerConfig>
  /** Entries left out, each with the reason (e.g. an SSE server). */
  skipped: string[]
}

/**
 * Reads an MCP file of the shape `{ "mcpServers": { name: { command, args?, env? } | { type: "http", url, headers? } } }`
 * with `${VAR}` and `${VAR:-default}` taken from `env`. Throws naming the file and the server for a malformed one.
 */
export function readMcpFile(file: string, env: NodeJS.ProcessEnv = process.env): McpFileServers {
  let parsed: unknown
  try {
    const text = readFileSync(file, 'utf8')
    // An empty file (e.g. the mount point the sandbox leaves for a protected path) names no servers.
    if (!text.trim()) return { file, servers: {}, skipped: [] }
    parsed = JSON.parse(text)
  } catch (error) {
    throw new Error(`mcp: ${file} is not readable JSON: ${errorMessage(error)}`)
  }
  const root = parsed as { mcpServers?: unknown }
  if (root === null || typeof root !== 'object' || Array.isArray(root))
    throw new Error(`mcp: ${file} must hold a JSON object with "mcpServers"`)
  const entries = root.mcpServers ?? {}
  if (entries === null || typeof entries !== 'object' || Array.isArray(entries))
    throw new Error(`mcp: ${file}: "mcpServers" must be an object of servers by name`)
  const servers: Record<string, McpServerConfig> = {}
  const skipped: string[] = []
  for (const [name, raw] of Object.entries(entries as Record<string, unknown>)) {
    const where = `mcp: ${file}: server "${name}"`
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${where} must be an object`)
    const entry = raw as Record<string, unknown>
    const type = entry.type ?? ('url' in entry ? 'http' : 'stdio')
    const expand = (value: unknown, field: string): string => {
      if (typeof value !== 'string') throw new Error(`${where}: ${field} must be a string`)
      return expandVariables(value, env)
    }
    const record = (value: unknown, field: string): Record<string, string> | undefined => {
      if (value === undefined) return undefined
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        throw new Error(`${where}: ${field} must be an object of strings`)
      return Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, expand(v, `${field}.${k}`)]),
      )
    }
    let server: McpServerConfig
    if (type === 'stdio') {
      if (entry.args !== undefined && !Array.isArray(entry.args)) throw new Error(`${where}: args must be a list`)
      const args = (entry.args as unknown[] | undefined)?.map((arg, index) => expand(arg, `args[${index}]`))
      const envs = record(entry.env, 'env')
      server = {
        command: expand(entry.command, 'command'),
        ...(args ? { args } : {}),
        ...(envs ? { env: envs } : {}),
        ...(entry.cwd !== undefined ? { cwd: path.resolve(path.dirname(file), expand(entry.cwd, 'cwd')) } : {}),
      }
      if (!server.cwd) server.cwd = path.dirname(file)
    } else if (type === 'http' || type === 'streamable-http') {
      const headers = record(entry.headers, 'headers')
      server = { url: expand(entry.url, 'url'), ...(headers ? { headers } : {}) }
    } else {
      skipped.push(`${where}: type ${JSON.stringify(type)} is not supported (stdio and http are)`)
      continue
    }
    try {
      checkServer(name, server)
    } catch (error) {
      throw new Error(`${file}: ${errorMessage(error)}`)
    }
    servers[name] = server
  }
  return { file, servers, skipped }
}

/** `${NAME}` and `${NAME:-default}`; an unset variable without a default becomes empty. */
function expandVariables(text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_match, name: string, fallback?: string) => {
    const value = env[name]
    return value !== undefined && value !== '' ? value : (fallback ?? '')
  })
}

export const name = 'mcp-config-files'
export const inject = ['mcp', 'workspaceTrust']

/**
 * Starts the servers of `--mcp-config` files at once, and those of the
 * project's `.mcp.json` when the folder is trusted: at once when it already
 * is, else at the first step of a session in that folder, after asking the
 * user where a surface can answer. Otherwise they are reported and not started.
 */
export function apply(ctx: Context, config: McpConfigFilesConfig) {
  const logger = ctx.logger('mcp')
  const folder = path.resolve(config.folder || process.cwd())
  /** Connects the file's servers; resolves once each has had its first attempt. */
  const start = (found: McpFileServers): Promise<unknown> => {
    for (const skipped of found.skipped) logger.warn('%s', skipped)
    return Promise.all(
      Object.entries(found.servers).map(([server, settings]) =>
        ctx.mcp.connect(ctx, server, settings).catch((error: unknown) => {
          logger.warn('mcp: server "%s" from %s was not started: %s', server, found.file, errorMessage(error))
        }),
      ),
    )
  }
  // The files the user named are read at load, so a malformed one fails the row loudly, naming the file.
  const given = config.files.map((file) => readMcpFile(path.resolve(folder, file)))
  const projectFile = config.projectFile ? path.resolve(folder, config.projectFile) : undefined
  let project: McpFileServers | undefined
  try {
    project = projectFile && existsSync(projectFile) ? readMcpFile(projectFile) : undefined
  } catch (error) {
    // A repository's own file is not the user's config: a broken one is reported, never fatal.
    logger.warn('%s; its servers were not started', errorMessage(error))
  }
  for (const found of given) void start(found)
  if (!project || Object.keys(project.servers).length === 0) return
  const pending = project
  const names = Object.keys(pending.servers).join(', ')
  const trust = ctx.workspaceTrust
  if (trust.isTrusted(folder)) return void start(pending)
  let decided: Promise<boolean> | undefined
  const refused = () =>
    logger.warn(
      'mcp: the servers of %s (%s) were not started: the folder %s is not trusted. Trust it when asked, ' +
        'run headless with --trust-workspace, or list it under trustedFolders on the workspace-trust row.',
      pending.file,
      names,
      folder,
    )
  ctx.on('agent/pre-step', async (agent, step, next) => {
    const cwd = agent.session.meta.cwd
    if (decided === undefined && trust.folderOf(cwd) === trust.folderOf(folder)) {
      decided = trust.request(folder, {
        sessionId: agent.session.id,
        what: `the MCP servers of ${pending.file} (${names})`,
        signal: step.signal,
      })
      // Awaits the connections' first attempts, so the servers' tools are in this request.
      if (await decided) await untilAborted(start(pending), step.signal).catch(() => {})
      else refused()
    }
    return next()
  })
}
