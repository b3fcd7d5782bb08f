import { constants } from 'node:fs'
import { access, realpath, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, dirname, extname, isAbsolute, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Context } from '@dsh/cordis'
import { isWithin } from '@dsh/fs'
import {
  type FileDiagnostic,
  type LspAnswer,
  type LspDiagnosticsRequest,
  type LspDiagnosticsResult,
  LspError,
  type LspLocation,
  type LspOperation,
  type LspProvider,
  type LspQuery,
} from '@dsh/lsp'
import { protectedProjectPaths, type SandboxPolicy } from '@dsh/sandbox'
import { errorMessage } from '@dsh/tools'
import type { Diagnostic } from 'vscode-languageserver-protocol'
import type { LspStdioConfig, ServerConfig } from './config.ts'
import { RequestTimedOut, RunningServer, ServerStopped } from './server.ts'

/** What this provider needs from `ctx.permission` (optional): the sandbox policy of a session. */
interface PolicySource {
  sandboxPolicy(run: { sessionId: string; cwd: string }): SandboxPolicy
}

/** One server per session, configured server and project root, across its restarts. */
interface Slot {
  sessionId: string
  current?: RunningServer
  starting?: Promise<RunningServer>
  /** When it crashed, within the restart window. */
  crashes: number[]
}

/** The request and the server capability that announces it. */
const METHODS: Record<LspOperation, [string, string]> = {
  goToDefinition: ['textDocument/definition', 'definitionProvider'],
  findReferences: ['textDocument/references', 'referencesProvider'],
  goToImplementation: ['textDocument/implementation', 'implementationProvider'],
  hover: ['textDocument/hover', 'hoverProvider'],
}

const SEVERITIES = ['error', 'warning', 'information', 'hint'] as const

/**
 * The stdio provider of `ctx.lsp`: local language servers started on first
 * use for a file's language, one per session and project root, kept warm
 * until the session closes, confined like every other process dsh starts.
 */
export class StdioLspProvider implements LspProvider {
  private readonly byExtension = new Map<string, { id: string; config: ServerConfig }>()
  private readonly slots = new Map<string, Slot>()
  private readonly log

  constructor(
    private readonly ctx: Context,
    private readonly config: LspStdioConfig,
  ) {
    this.log = ctx.logger('lsp-stdio')
    for (const [id, server] of Object.entries(config.servers)) {
      for (const extension of Object.keys(server.extensions)) {
        if (!this.byExtension.has(extension)) this.byExtension.set(extension, { id, config: server })
      }
    }
  }

  handles(file: string): boolean {
    return this.byExtension.has(extname(file).toLowerCase())
  }

  extensions(): string[] {
    return [...this.byExtension.keys()]
  }

  async query(query: LspQuery): Promise<LspAnswer> {
    const notes: string[] = []
    try {
      return await this.attempt(query, notes)
    } catch (error) {
      // A server that died under the request (or just before it) is restarted once; queries only read.
      if (!(error instanceof LspError && error.code === 'LSP_SERVER_FAILED' && error.cause instanceof ServerStopped))
        throw error
      return this.attempt(query, notes)
    }
  }

  private async attempt(query: LspQuery, notes: string[]): Promise<LspAnswer> {
    const { server, languageId } = await this.serverFor(query, notes)
    const [method, capability] = METHODS[query.operation]
    if (!server.capabilities[capability]) {
      throw new LspError(
        'LSP_UNSUPPORTED',
        `the ${server.id} language server does not support ${query.operation} (it announced no ${capability})`,
      )
    }
    await this.syncOpen(server, query)
    await this.syncFile(server, query.file, languageId, query, true)
    const params = {
      textDocument: { uri: pathToFileURL(query.file).href },
      position: query.position,
      ...(query.operation === 'findReferences' ? { context: { includeDeclaration: true } } : {}),
    }
    let raw: unknown
    try {
      raw = await server.request(method, params, query.signal)
    } catch (error) {
      throw this.failure(error, server, method)
    }
    if (query.operation === 'hover') {
      const markdown = hoverMarkdown(raw)
      if (markdown === undefined) throw garbage(server, method)
      return { kind: 'hover', markdown, notes }
    }
    const locations = locationsOf(raw)
    if (!locations) throw garbage(server, method)
    return { kind: 'locations', locations, notes }
  }

  async diagnostics(request: LspDiagnosticsRequest): Promise<LspDiagnosticsResult> {
    const deadline = Date.now() + request.waitMs
    const result: LspDiagnosticsResult = { checked: [], diagnostics: [] }
    await Promise.all(
      request.files
        .filter((file) => this.handles(file) && isWithin(request.workspace, file))
        .map(async (file) => {
          try {
            const found = await this.diagnosticsOf(file, request, deadline)
            if (!found) return
            result.checked.push(file)
            result.diagnostics.push(...found.map((item) => fileDiagnostic(file, item)))
          } catch (error) {
            this.log.debug('no diagnostics for %s: %s', file, errorMessage(error))
          }
        }),
    )
    return result
  }

  /** Stops the servers of one session (it closed). */
  async stopSession(sessionId: string): Promise<void> {
    const mine = [...this.slots].filter(([, slot]) => slot.sessionId === sessionId)
    for (const [key] of mine) this.slots.delete(key)
    await Promise.all(mine.map(([, slot]) => this.stopSlot(slot)))
  }

  async stopAll(): Promise<void> {
    const all = [...this.slots.values()]
    this.slots.clear()
    await Promise.all(all.map((slot) => this.stopSlot(slot)))
  }

  private async stopSlot(slot: Slot): Promise<void> {
    const server = slot.current ?? (await slot.starting?.catch(() => undefined))
    await server?.stop(this.config.shutdownTimeoutMs)
  }

  private async diagnosticsOf(file: string, request: LspDiagnosticsRequest, deadline: number) {
    const pending = this.serverFor({ ...request, file }, [])
    // A cold server may take longer than the wait: it keeps starting for the next call.
    pending.catch(() => {})
    const started = await Promise.race([pending, delay(deadline - Date.now()).then(() => undefined)])
    if (!started) return undefined
    const { server, languageId } = started
    const before = server.publications(file)
    const changed = await this.syncFile(server, file, languageId, request, false)
    // Nothing new to check: what it said last still holds.
    if (!changed && before > 0) return server.diagnosticsAfter(file, before - 1, deadline, 0)
    return server.diagnosticsAfter(file, before, deadline, this.config.diagnosticsSettleMs)
  }

  /** The running server for the file, started (or restarted after a crash) when needed. */
  private async serverFor(
    query: { file: string; workspace: string; sessionId: string; signal?: AbortSignal },
    notes: string[],
  ): Promise<{ server: RunningServer; languageId: string }> {
    const extension = extname(query.file).toLowerCase()
    const entry = this.byExtension.get(extension)
    if (!entry) throw new LspError('LSP_NO_SERVER', `no language server is configured for ${extension} files`)
    if (!isWithin(query.workspace, query.file)) {
      throw new LspError('LSP_NO_SERVER', `${query.file} is outside the workspace ${query.workspace}`)
    }
    const languageId = entry.config.extensions[extension] as string
    const root = await projectRoot(query.file, query.workspace, entry.config.rootMarkers)
    const key = `${query.sessionId}\0${entry.id}\0${root}`
    let slot = this.slots.get(key)
    if (!slot) {
      slot = { sessionId: query.sessionId, crashes: [] }
      this.slots.set(key, slot)
    }
    const current = slot.current
    if (current?.alive && !slot.starting) {
      try {
        await current.ready
      } catch (error) {
        throw this.failure(error, current, 'initialize')
      }
      if (current.alive) return { server: current, languageId }
    }
    if (!slot.starting) {
      const owner = slot
      owner.starting = this.start(owner, entry.id, entry.config, root, query, notes).finally(() => {
        owner.starting = undefined
      })
    }
    return { server: await (slot.starting as Promise<RunningServer>), languageId }
  }

  private async start(
    slot: Slot,
    id: string,
    config: ServerConfig,
    root: string,
    query: { workspace: string; sessionId: string },
    notes: string[],
  ): Promise<RunningServer> {
    const commandLine = [config.command, ...config.args].join(' ')
    const crashed = slot.current
    if (crashed && !crashed.alive) {
      const now = Date.now()
      slot.crashes = [...slot.crashes.filter((at) => now - at < this.config.restartWindowMs), now]
      const why = crashed.stoppedBecause
      if (slot.crashes.length > this.config.maxRestarts) {
        throw new LspError(
          'LSP_UNAVAILABLE',
          `the ${id} language server (${commandLine}) stopped ${slot.crashes.length} times; it is not restarted again in this session. Last time ${why}`,
        )
      }
      const backoff = Math.min(
        this.config.restartBackoffMs * 2 ** (slot.crashes.length - 1),
        this.config.maxRestartBackoffMs,
      )
      this.log.warn('the %s language server in %s stopped (%s); restarting it in %d ms', id, root, why, backoff)
      await delay(backoff)
      notes.push(`the ${id} language server had stopped (${why.split('\n')[0]}) and was restarted`)
    }
    const subprocess = this.ctx.subprocess
    const env = subprocess.environment(config.env)
    const program = await resolveCommand(config.command, env.PATH ?? '')
    if (!program) {
      throw new LspError(
        'LSP_UNAVAILABLE',
        `the ${id} language server is not installed: \`${commandLine}\` was tried, and ${config.command} is not on PATH.` +
          (config.install ? ` Install it with: ${config.install}` : ''),
      )
    }
    let argv = [program, ...config.args]
    let release: (() => Promise<void>) | undefined
    const policy = await withInstallation(this.policyFor(query), program)
    const sandbox = this.ctx.get('sandbox')
    if (policy.mode !== 'off' && !sandbox) {
      throw new LspError(
        'LSP_UNAVAILABLE',
        `the ${id} language server must run in the ${policy.mode} sandbox, but no sandbox service is running`,
      )
    }
    if (sandbox) {
      const wrapped = await sandbox.wrap(argv, policy, root)
      if ('refused' in wrapped) {
        throw new LspError(
          'LSP_UNAVAILABLE',
          `the sandbox refused to start the ${id} language server: ${wrapped.refused}`,
        )
      }
      argv = wrapped.argv
      release = wrapped.release
    }
    let handle: ReturnType<typeof subprocess.run>
    try {
      handle = subprocess.run({ argv, cwd: root, env: config.env, openStdin: true })
    } catch (error) {
      await release?.()
      throw new LspError('LSP_UNAVAILABLE', `could not start the ${id} language server: ${errorMessage(error)}`)
    }
    if (release) void handle.done.then(release, release)
    const server = new RunningServer({
      id,
      config,
      root,
      handle,
      requestTimeoutMs: this.config.requestTimeoutMs,
      startTimeoutMs: this.config.startTimeoutMs,
      maxStderrBytes: this.config.maxStderrBytes,
      maxMessageBytes: this.config.maxMessageBytes,
    })
    slot.current = server
    void server.exited.then((why) => {
      if (slot.current === server && why !== 'it was stopped')
        this.log.warn('the %s language server in %s stopped: %s', id, root, why)
    })
    try {
      await server.ready
    } catch (error) {
      throw this.failure(error, server, 'initialize')
    }
    this.log.debug('started the %s language server in %s', id, root)
    return server
  }

  /**
   * The session's sandbox policy, as `bash` gets it, with the network off:
   * a language server reads the project and needs no network.
   */
  private policyFor(query: { workspace: string; sessionId: string }): SandboxPolicy {
    const source = this.ctx.get('permission' as string) as PolicySource | undefined
    const policy: SandboxPolicy = source
      ? source.sandboxPolicy({ sessionId: query.sessionId, cwd: query.workspace })
      : {
          mode: 'workspace-write',
          writableRoots: [query.workspace],
          protectedPaths: protectedProjectPaths(query.workspace),
          network: 'off',
        }
    if (policy.mode === 'off') return policy
    const { proxyToken: _grant, ...confined } = policy
    return { ...confined, network: 'off' }
  }

  /** Hands the server the current text of every file it has open that changed on disk since. */
  private async syncOpen(server: RunningServer, query: LspQuery): Promise<void> {
    for (const uri of server.openFiles()) {
      const file = fileURLToPath(uri)
      if (file === query.file) continue
      const languageId = this.byExtension.get(extname(file).toLowerCase())?.config.extensions[extname(file)]
      if (languageId) await this.syncFile(server, file, languageId, query, false).catch(() => false)
    }
  }

  /** Reads the file through `ctx.fs` (the deny list, an editor's buffers) and syncs it; true when it changed. */
  private async syncFile(
    server: RunningServer,
    file: string,
    languageId: string,
    run: { workspace: string; sessionId: string; signal?: AbortSignal },
    required: boolean,
  ): Promise<boolean> {
    let text: string
    try {
      const data = await this.ctx.fs.readFile(file, {
        cwd: run.workspace,
        sessionId: run.sessionId,
        maxBytes: this.config.maxDocumentBytes,
        ...(run.signal ? { signal: run.signal } : {}),
      })
      text = data.toString('utf8')
    } catch (error) {
      if (required) throw new LspError('LSP_NO_SERVER', `could not read ${file}: ${errorMessage(error)}`)
      return false
    }
    return server.sync(file, languageId, text)
  }

  private failure(error: unknown, server: RunningServer, method: string): Error {
    if (error instanceof LspError) return error
    if (error instanceof RequestTimedOut) {
      return new LspError('LSP_TIMEOUT', `the ${server.id} language server did not answer ${method} in time`)
    }
    if (error instanceof ServerStopped) {
      const failure = new LspError(
        'LSP_SERVER_FAILED',
        `the ${server.id} language server stopped during ${method}: ${error.message}. It is restarted on the next query.`,
      )
      failure.cause = error
      return failure
    }
    if (error instanceof Error && error.name === 'AbortError') return error
    return new LspError(
      'LSP_SERVER_FAILED',
      `the ${server.id} language server failed ${method}: ${errorMessage(error)}`,
    )
  }
}

function garbage(server: RunningServer, method: string): LspError {
  return new LspError(
    'LSP_SERVER_FAILED',
    `the ${server.id} language server answered ${method} with something that is not a valid LSP result`,
  )
}

/** The nearest folder from the file's up to the workspace that holds a root marker; else the workspace. */
async function projectRoot(file: string, workspace: string, markers: string[]): Promise<string> {
  for (let dir = dirname(file); isWithin(workspace, dir); dir = dirname(dir)) {
    for (const marker of markers) {
      if (
        await stat(join(dir, marker)).then(
          () => true,
          () => false,
        )
      )
        return dir
    }
    if (dir === workspace) break
  }
  return workspace
}

/**
 * The policy with the server's own installation readable: a server installed
 * under /tmp (a checkout or npm prefix there) would be hidden by the private
 * /tmp. Its installation is the outermost folder above the program holding a
 * package.json (the project whose node_modules has it).
 */
async function withInstallation(policy: SandboxPolicy, program: string): Promise<SandboxPolicy> {
  if (policy.mode === 'off') return policy
  const real = await realpath(program).catch(() => program)
  const hiddenByTmp = ['/tmp', tmpdir()].some((dir) => isWithin(dir, real))
  if (!hiddenByTmp) return policy
  let installation: string | undefined
  for (let dir = dirname(real); dir !== dirname(dir); dir = dirname(dir)) {
    if (
      await stat(join(dir, 'package.json')).then(
        () => true,
        () => false,
      )
    )
      installation = dir
  }
  const roots = installation ? [installation] : [dirname(real)]
  return { ...policy, readableRoots: [...(policy.readableRoots ?? []), ...roots] }
}

/** An absolute path as is; a bare name looked up in the absolute entries of PATH. */
async function resolveCommand(command: string, path: string): Promise<string | undefined> {
  const candidates = isAbsolute(command)
    ? [command]
    : path
        .split(delimiter)
        .filter((dir) => isAbsolute(dir))
        .map((dir) => join(dir, command))
  for (const candidate of candidates) {
    const isFile = await stat(candidate).then(
      (info) => info.isFile(),
      () => false,
    )
    if (
      isFile &&
      (await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      ))
    )
      return candidate
  }
  return undefined
}

function isRange(value: unknown): value is LspLocation['range'] {
  const range = value as LspLocation['range'] | undefined
  const point = (p: unknown) =>
    typeof p === 'object' &&
    p !== null &&
    Number.isInteger((p as { line: unknown }).line) &&
    Number.isInteger((p as { character: unknown }).character)
  return typeof range === 'object' && range !== null && point(range.start) && point(range.end)
}

/** Location, Location[] or LocationLink[] as absolute file locations; undefined for anything else. */
export function locationsOf(raw: unknown): LspLocation[] | undefined {
  if (raw === null || raw === undefined) return []
  const list = Array.isArray(raw) ? raw : [raw]
  const out: LspLocation[] = []
  for (const item of list) {
    if (typeof item !== 'object' || item === null) return undefined
    const link = item as { targetUri?: unknown; targetSelectionRange?: unknown; targetRange?: unknown }
    const plain = item as { uri?: unknown; range?: unknown }
    const uri = link.targetUri ?? plain.uri
    const range = link.targetUri !== undefined ? (link.targetSelectionRange ?? link.targetRange) : plain.range
    if (typeof uri !== 'string' || !isRange(range)) return undefined
    if (!uri.startsWith('file:')) continue
    out.push({ file: fileURLToPath(uri), range })
  }
  return out
}

/** Hover contents as Markdown; null for no hover, undefined for something that is not a hover. */
export function hoverMarkdown(raw: unknown): string | null | undefined {
  if (raw === null || raw === undefined) return null
  if (typeof raw !== 'object' || !('contents' in raw)) return undefined
  const part = (content: unknown): string | undefined => {
    if (typeof content === 'string') return content
    if (typeof content !== 'object' || content === null) return undefined
    const { value, language, kind } = content as { value?: unknown; language?: unknown; kind?: unknown }
    if (typeof value !== 'string') return undefined
    if (typeof language === 'string') return `\`\`\`${language}\n${value}\n\`\`\``
    return kind === 'plaintext' ? value.replace(/[\\`*_{}[\]()#+\-.!<>|]/g, '\\$&') : value
  }
  const contents = (raw as { contents: unknown }).contents
  const parts = (Array.isArray(contents) ? contents : [contents]).map(part)
  if (parts.some((text) => text === undefined)) return undefined
  const text = parts.join('\n\n').trim()
  return text === '' ? null : text
}

function fileDiagnostic(file: string, item: Diagnostic): FileDiagnostic {
  const severity = SEVERITIES[(item.severity ?? 1) - 1] ?? 'error'
  return {
    path: file,
    line: (item.range?.start?.line ?? 0) + 1,
    character: (item.range?.start?.character ?? 0) + 1,
    severity,
    message: String(item.message ?? ''),
    ...(item.code !== undefined ? { code: String(item.code) } : {}),
    ...(item.source !== undefined ? { source: String(item.source) } : {}),
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
}
