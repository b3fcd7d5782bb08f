import os from 'node:os'
import path from 'node:path'
import { type Context, Schema } from '@dsh/cordis'
import { REASONING_EFFORTS } from '@dsh/llm'
import { IdleUnloader, SessionAccess, sessionActivity } from '@dsh/conversations'
import { PRESETS } from '@dsh/permission'
import type {} from '@dsh/session-catalog'
import { ModelsRequest, SettingsChange, SettingsConfig, SettingsStore } from '@dsh/user-settings'
import { FileListings, listDirs } from '@dsh/workspace-files'
import { z } from 'zod'
import { errorMessage } from '@dsh/tools'
import manifest from '../package.json' with { type: 'json' }
import { SocketHub } from './gateway/hub.ts'
import { applyInteraction } from './gateway/interaction.ts'
import { applySessionRoutes } from './gateway/session-routes.ts'
import { bodyOf, checkedSessionId, existingFolder, gatewayRoute, badParameter, queryOf } from './gateway/requests.ts'
import type {} from './server.ts'

export const name = 'web-api'
export const inject = ['webServer', 'agents', 'sessions', 'conversations']

export interface WebApiConfig extends SettingsConfig {
  launchCwd?: string
  home?: string
  settingsFile?: string
  filesCacheMs: number
  filesMaxOutputBytes: number
  filesTimeoutMs: number
  maxFrameBytes: number
  idleUnloadMs: number
  activityOutputBytes: number
}

export const Config: Schema<WebApiConfig> = Schema.intersect([
  Schema.object({
    launchCwd: Schema.string().description(
      'The default workspace of new sessions. Default: the folder dsh was started in.',
    ),
    home: Schema.string().description('The dsh home shown to the app. Default: $DSH_HOME, else ~/.dsh.'),
    settingsFile: Schema.string().description(
      "The settings document (agent: and web: sections). Default: the agent row's settingsFile.",
    ),
    filesCacheMs: Schema.natural()
      .default(5_000)
      .description('How long a workspace file listing (for @ mentions) is reused.'),
    filesMaxOutputBytes: Schema.natural()
      .min(1024)
      .default(16 * 1024 * 1024)
      .description('Largest file listing read from ripgrep; past it the listing is cut.'),
    filesTimeoutMs: Schema.natural().min(1).default(10_000).description('How long listing a workspace may take.'),
    maxFrameBytes: Schema.natural()
      .min(1024)
      .default(64 * 1024)
      .description('Largest WebSocket frame a client may send.'),
    idleUnloadMs: Schema.natural()
      .default(60_000)
      .description(
        'An agent of a top-level session is unloaded (its session closed, its log sealed and its lease given up, so other dsh processes may open it) this long after it went idle with no tab watching it; the next message resumes it from the log. 0 keeps agents until exit.',
      ),
    activityOutputBytes: Schema.natural()
      .min(256)
      .default(16 * 1024)
      .description("The newest output of each background job and terminal a session's activity shows (bytes)."),
  }),
  SettingsConfig,
])

const FilesQuery = z.object({
  cwd: z.string().optional(),
  query: z.string().max(1000).default(''),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
})
const CommandsQuery = z.object({ cwd: z.string().optional() })
const DirsQuery = z.object({ path: z.string().optional(), hidden: z.enum(['0', '1', 'true', 'false']).optional() })

/**
 * The dsh web API on `ctx.webServer`: HTTP routes for sessions, approvals,
 * questions, files, settings, and the `/api/ws` socket that streams events.
 */
export function apply(ctx: Context, config: WebApiConfig) {
  const launchCwd = path.resolve(config.launchCwd ?? process.cwd())
  const home = config.home ?? (process.env.DSH_HOME?.trim() || path.join(os.homedir(), '.dsh'))
  const settingsFile = config.settingsFile ?? ctx.agents.settingsFile()
  if (!settingsFile)
    throw new Error(
      'web-api: no settings file: set settingsFile on the agent row (the base bundle does) or on this row',
    )
  const settings = new SettingsStore(ctx, { ...config, settingsFile })
  const sessions = new SessionAccess(ctx, 'web-api')
  const hub = new SocketHub(ctx, sessions, config.maxFrameBytes)
  const idle = new IdleUnloader(
    ctx,
    config.idleUnloadMs,
    (sessionId) => hub.isWatched(sessionId),
    (agent) => sessions.unload(agent),
    'web-api',
  )
  hub.watchers = { watched: (sessionId) => idle.disarm(sessionId), unwatched: (sessionId) => idle.arm(sessionId) }
  const server = ctx.webServer

  ctx.effect(() => () => hub.close(), 'web sockets')
  server.upgrade(ctx, '/api/ws', (req, socket, head) => hub.accept(req, socket, head))

  ctx.on('session/published', (session, event) => {
    hub.onEvent(session.id, event)
    if (event.type === 'turn/start' || event.type === 'turn/end' || (event.type as string) === 'session/title')
      hub.broadcast({ type: 'sessions-changed' })
  })
  ctx.on('agent/delta', (agent, delta) => hub.toSubscribers(agent.id, { type: 'delta', sessionId: agent.id, delta }))
  ctx.on('agent/status', (agent, status) => hub.broadcast({ type: 'status', sessionId: agent.id, status }))

  const route = gatewayRoute(ctx)
  applyInteraction(ctx, route, hub)
  applySessionRoutes(ctx, route, hub, sessions, { launchCwd, defaults: () => settings.webOrNone() })
  route('GET', '/api/sessions/:id/activity', (request) =>
    sessionActivity(ctx, sessions, checkedSessionId(request.params.id as string), config.activityOutputBytes),
  )

  route('GET', '/api/info', () => {
    const { provider, model } = ctx.agents.defaults()
    return {
      // A release stamps every package with the version of dsh.
      version: manifest.version,
      launchCwd,
      home,
      defaultModel: model,
      provider,
      models:
        ctx
          .get('llm')
          ?.models(provider)
          .map((m) => m.id) ?? [],
      presets: [...PRESETS],
      reasoningEfforts: [...REASONING_EFFORTS],
      auth: server.token !== undefined,
    }
  })

  const listings = new FileListings({
    cacheMs: config.filesCacheMs,
    maxOutputBytes: config.filesMaxOutputBytes,
    timeoutMs: config.filesTimeoutMs,
  })
  route('GET', '/api/files', async (request) => {
    const q = queryOf(FilesQuery, request)
    return listings.find(q.cwd ? await existingFolder(q.cwd, 'cwd') : launchCwd, q.query, q.limit)
  })

  route('GET', '/api/commands', async (request) => {
    const q = queryOf(CommandsQuery, request)
    return { commands: ctx.conversations.commands({ cwd: q.cwd ? await existingFolder(q.cwd, 'cwd') : launchCwd }) }
  })

  route('GET', '/api/dirs', async (request) => {
    const q = queryOf(DirsQuery, request)
    const dir = q.path ? await existingFolder(q.path, 'path') : launchCwd
    return listDirs(dir, q.hidden === '1' || q.hidden === 'true').catch((error: unknown) => {
      throw badParameter('path', `cannot read ${dir}: ${errorMessage(error)}`)
    })
  })

  route('GET', '/api/workspaces', async () => ({ workspaces: await sessions.workspaces(launchCwd) }))

  route('GET', '/api/settings', () => settings.read())
  route('PUT', '/api/settings', async (request) => settings.write(await bodyOf(SettingsChange, request, 'settings')))
  route('POST', '/api/settings/test', () => settings.test())
  route('POST', '/api/settings/models', async (request) =>
    settings.models(await bodyOf(ModelsRequest, request, 'models request')),
  )
}
