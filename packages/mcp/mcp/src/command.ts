import { existsSync, readFileSync } from 'node:fs'
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { isPlainObject, parseYaml, stringifyYaml } from '@dsh/loader/compose'
import { errorMessage } from '@dsh/tools'
import { checkServer, type McpServerConfig } from './config.ts'

export interface McpCommandOptions {
  args: readonly string[]
  /** The patch file the servers are kept in: a profile's `cordis.patch.yml`, or the home's. */
  patchFile: string
  writeOut(text: string): void
  writeErr(text: string): void
}

const USAGE = `usage: dsh mcp [--profile <name>] add [--env KEY=VALUE]... [--header "Name: value"]... <name> <command> [args...]
       dsh mcp [--profile <name>] add <name> <http(s)-url>
       dsh mcp [--profile <name>] list
       dsh mcp [--profile <name>] remove <name>
Servers go in the profile's patch file, or with no --profile in $DSH_HOME/cordis.patch.yml (every profile).
`

/** The row whose config holds the servers. */
const ROW = 'mcp'

class UsageError extends Error {}

/**
 * `dsh mcp add|list|remove`: keeps MCP servers in a patch file, as the
 * `servers` of an entry for the `mcp` row. The last such entry is edited in
 * place (its other config fields stay); without one, an entry is appended.
 */
export async function mcpCommand(options: McpCommandOptions): Promise<number> {
  const { writeOut, writeErr, patchFile } = options
  try {
    const [verb, ...rest] = options.args
    if (verb === 'list') {
      if (rest.length) throw new UsageError(`list takes no arguments, got ${rest.join(' ')}`)
      const servers = readServers(patchFile).servers
      const names = Object.keys(servers)
      if (!names.length) writeOut(`no MCP servers in ${patchFile}\n`)
      for (const name of names) writeOut(`${name}\t${describe(servers[name])}\n`)
      return 0
    }
    if (verb === 'add') {
      const { name, server } = parseAdd(rest)
      checkServer(name, server)
      const file = readServers(patchFile)
      const replaced = Object.hasOwn(file.servers, name)
      file.servers[name] = server
      await file.save()
      writeErr(`dsh: ${replaced ? 'replaced' : 'added'} MCP server ${name} in ${patchFile}\n`)
      return 0
    }
    if (verb === 'remove') {
      if (rest.length !== 1) throw new UsageError('remove takes one server name')
      const name = rest[0] as string
      const file = readServers(patchFile)
      if (!Object.hasOwn(file.servers, name)) {
        writeErr(`dsh: no MCP server named ${name} in ${patchFile}\n`)
        return 1
      }
      delete file.servers[name]
      await file.save()
      writeErr(`dsh: removed MCP server ${name} from ${patchFile}\n`)
      return 0
    }
    throw new UsageError(verb === undefined ? 'a command is required' : `unknown command ${JSON.stringify(verb)}`)
  } catch (error) {
    if (error instanceof UsageError) {
      writeErr(`dsh: mcp: ${error.message}\n${USAGE}`)
      return 1
    }
    writeErr(`dsh: ${errorMessage(error)}\n`)
    return 1
  }
}

function parseAdd(args: readonly string[]): { name: string; server: McpServerConfig } {
  const env: Record<string, string> = {}
  const headers: Record<string, string> = {}
  let i = 0
  for (; i < args.length; i++) {
    const arg = args[i] as string
    const value = () => {
      const next = args[++i]
      if (next === undefined) throw new UsageError(`${arg} needs a value`)
      return next
    }
    if (arg === '--env') {
      const pair = value()
      const at = pair.indexOf('=')
      if (at <= 0) throw new UsageError(`--env needs KEY=VALUE, got ${JSON.stringify(pair)}`)
      env[pair.slice(0, at)] = pair.slice(at + 1)
    } else if (arg === '--header') {
      const pair = value()
      const at = pair.indexOf(':')
      if (at <= 0) throw new UsageError(`--header needs "Name: value", got ${JSON.stringify(pair)}`)
      headers[pair.slice(0, at).trim()] = pair.slice(at + 1).trim()
    } else if (arg === '--') {
      i++
      break
    } else if (arg.startsWith('-')) {
      throw new UsageError(`unknown option ${arg}`)
    } else break
  }
  const [name, target, ...rest] = args.slice(i)
  if (name === undefined || target === undefined) throw new UsageError('add needs a name and a command or URL')
  if (/^https?:\/\//i.test(target)) {
    if (rest.length) throw new UsageError(`an HTTP server takes no arguments after its URL, got ${rest.join(' ')}`)
    if (Object.keys(env).length) throw new UsageError('--env is for servers started as a command')
    return { name, server: { url: target, ...(Object.keys(headers).length ? { headers } : {}) } }
  }
  if (Object.keys(headers).length) throw new UsageError('--header is for HTTP servers')
  return {
    name,
    server: {
      command: target,
      ...(rest.length ? { args: rest } : {}),
      ...(Object.keys(env).length ? { env } : {}),
    },
  }
}

function describe(server: unknown): string {
  if (!isPlainObject(server)) return String(server)
  if (typeof server.url === 'string') return `http ${server.url}`
  const args = Array.isArray(server.args) ? server.args.map((a) => JSON.stringify(String(a))).join(' ') : ''
  const env = isPlainObject(server.env) ? ` (env: ${Object.keys(server.env).join(', ')})` : ''
  return `stdio ${JSON.stringify(String(server.command))}${args ? ` ${args}` : ''}${env}`
}

/** The patch file's `mcp` servers, editable in place, and a way to write the file back. */
function readServers(file: string): { servers: Record<string, unknown>; save(): Promise<void> } {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : ''
  const parsed = text.trim() ? parseYaml(text, file) : []
  const list = parsed === null || parsed === undefined ? [] : parsed
  if (!Array.isArray(list)) throw new Error(`${file}: a patch file must be a YAML list`)
  let entry = list.findLast((item) => isPlainObject(item) && item.id === ROW && isPlainObject(item.config)) as
    | { config: Record<string, unknown> }
    | undefined
  if (entry && entry.config.servers !== undefined && !isPlainObject(entry.config.servers))
    throw new Error(`${file}: the mcp entry's config.servers must be a mapping of server names`)
  const servers = (entry?.config.servers as Record<string, unknown> | undefined) ?? {}
  return {
    servers,
    async save() {
      if (!entry) {
        entry = { config: { servers } }
        list.push({ id: ROW, ...entry })
      } else entry.config.servers = servers
      // The comment lines at the top (a profile's header) are kept; YAML comments elsewhere are not.
      const header = /^(?:#.*\n)*/.exec(text)?.[0] ?? ''
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
      const temp = `${file}.${process.pid}.tmp`
      await writeFile(temp, `${header}${stringifyYaml(list)}`, { mode: 0o600 })
      await chmod(temp, 0o600)
      await rename(temp, file)
    },
  }
}
