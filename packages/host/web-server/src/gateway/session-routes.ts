import type {} from '@dsh/compaction'
import type { Context } from '@dsh/cordis'
import { type ContentBlock, type Message, REASONING_EFFORTS } from '@dsh/llm'
import { NETWORK_MODES, type NetworkMode, type PermissionPreset, PRESETS } from '@dsh/permission'
import { newMessageId, type SessionId } from '@dsh/session'
import type {} from '@dsh/session-catalog'
import { SessionBusyError, SessionNotFoundError } from '@dsh/session-persistence'
import type {} from '@dsh/session-titles'
import { z } from 'zod'
import { HttpError, parseWith } from '../http.ts'
import { type ApiRequest, JsonReply } from '../server.ts'
import { absolutePath, existingFolder } from './files.ts'
import { recentHistory } from './history.ts'
import type { SocketHub } from './hub.ts'
import { displayedAll } from './presentation.ts'
import { checkedModel, checkedSessionId, type SessionAccess, unknownSession } from './sessions.ts'

const effort = z.enum(REASONING_EFFORTS)
const preset = z.enum(PRESETS as [PermissionPreset, ...PermissionPreset[]])
const model = z.string().trim().min(1, 'must not be empty').max(200)
const network = z.enum(NETWORK_MODES as [NetworkMode, ...NetworkMode[]])
const base64 = /^[A-Za-z0-9+/]*={0,2}$/

const CreateBody = z
  .object({
    cwd: z.string().min(1).optional(),
    model: model.optional(),
    reasoningEffort: effort.optional(),
    permissionPreset: preset.optional(),
    network: network.optional(),
  })
  .strict()

const MessageBody = z
  .object({
    text: z.string(),
    images: z
      .array(
        z.object({
          mediaType: z.enum(['image/png', 'image/jpeg', 'image/gif', 'image/webp']),
          data: z
            .string()
            .min(4)
            .refine((d) => d.length % 4 === 0 && base64.test(d), 'must be base64 (without a data: prefix)'),
        }),
      )
      .max(20)
      .optional(),
  })
  .strict()
  .refine((m) => m.text.trim() !== '' || (m.images?.length ?? 0) > 0, { message: 'must not be empty (give text or images)', path: ['text'] })

const ForkBody = z.object({ turn: z.number().int().min(1).optional() }).strict()

const PatchBody = z
  .object({
    title: z.string().trim().min(1, 'must not be empty').max(200).optional(),
    model: model.optional(),
    reasoningEffort: effort.optional(),
    permissionPreset: preset.optional(),
    network: network.optional(),
  })
  .strict()

const ListQuery = z.object({
  query: z.string().trim().optional(),
  cwd: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().optional(),
})

const DetailQuery = z.object({ tail: z.coerce.number().int().min(1).optional() })
const EventsQuery = z.object({ before: z.coerce.number().int().min(0) })

function unavailable(what: string, plugin: string): HttpError {
  return new HttpError(503, 'unavailable', `${what} needs the ${plugin} plugin, which is not loaded`)
}

/** The session id of the path, or a 400 when it cannot name a session. */
function idOf(request: ApiRequest): string {
  return checkedSessionId(request.params.id as string)
}

/** The session routes of API.md: list, create, read, send, cancel, compact, fork, patch, delete. */
export function applySessionRoutes(ctx: Context, hub: SocketHub, sessions: SessionAccess, launchCwd: string): void {
  const server = ctx.webServer
  const changed = () => hub.broadcast({ type: 'sessions-changed' })

  /** Throws 404 unless the session is live or stored. */
  const mustExist = async (id: string) => {
    if (ctx.sessions.get(id)) return
    const persistence = ctx.get('sessionPersistence')
    try {
      if (!persistence) throw new SessionNotFoundError(id, 'this process')
      await persistence.stat(id as SessionId)
    } catch (error) {
      if (error instanceof SessionNotFoundError) throw unknownSession(id)
      throw error
    }
  }

  server.route(ctx, 'GET', '/api/sessions', async (request) => {
    const q = parseWith(ListQuery, Object.fromEntries(request.query), 'query')
    const cwd = q.cwd ? absolutePath(q.cwd, 'cwd') : undefined
    return sessions.list({ limit: q.limit, ...(cwd ? { cwd } : {}), ...(q.query ? { query: q.query } : {}), ...(q.cursor ? { cursor: q.cursor } : {}) })
  })

  server.route(ctx, 'POST', '/api/sessions', async (request) => {
    const body = parseWith(CreateBody, (await request.body()) ?? {}, 'new session')
    if (body.model) checkedModel(ctx, body.model)
    const cwd = body.cwd ? await existingFolder(body.cwd, 'cwd') : launchCwd
    const permission = ctx.get('permission')
    if (body.permissionPreset && !permission) throw unavailable('permissionPreset', 'permission')
    if (body.network && !permission) throw unavailable('network', 'permission')
    const agent = await ctx.agents.create({
      cwd,
      options: { ...(body.model ? { model: body.model } : {}), ...(body.reasoningEffort ? { reasoningEffort: body.reasoningEffort } : {}) },
    })
    if (body.permissionPreset) permission?.setPreset(agent.id, body.permissionPreset)
    else sessions.applyDefaultPreset(agent.id)
    if (body.network) permission?.setNetwork(agent.id, body.network)
    else sessions.applyDefaultNetwork(agent.id)
    changed()
    return new JsonReply(201, { sessionId: agent.id })
  })

  server.route(ctx, 'GET', '/api/sessions/:id', async (request) => {
    const q = parseWith(DetailQuery, Object.fromEntries(request.query), 'query')
    const view = await sessions.view(idOf(request))
    const history = q.tail ? recentHistory(view.events, q.tail) : { events: view.events }
    history.events = displayedAll(ctx, history.events, view.meta.cwd)
    return { session: sessions.describe(view), ...history }
  })

  server.route(ctx, 'GET', '/api/sessions/:id/events', async (request) => {
    const q = parseWith(EventsQuery, Object.fromEntries(request.query), 'query')
    const { events, meta } = await sessions.view(idOf(request))
    return { events: displayedAll(ctx, events.filter((event) => event.seq < q.before), meta.cwd) }
  })

  server.route(ctx, 'POST', '/api/sessions/:id/messages', async (request) => {
    const body = parseWith(MessageBody, await request.body(), 'message')
    const content: ContentBlock[] = []
    if (body.text.trim()) content.push({ type: 'text', text: body.text })
    for (const image of body.images ?? []) content.push({ type: 'image', mediaType: image.mediaType, data: image.data })
    const message: Message = { id: newMessageId(), role: 'user', content, source: { kind: 'user' } }
    const agent = await sessions.agent(idOf(request))
    const queued = agent.status === 'running'
    agent.send(message, 'followup')
    return new JsonReply(202, { queued })
  })

  server.route(ctx, 'POST', '/api/sessions/:id/cancel', async (request) => {
    const id = idOf(request)
    const agent = sessions.live(id)
    if (agent) agent.cancel('user')
    else await mustExist(id)
    return {}
  })

  server.route(ctx, 'POST', '/api/sessions/:id/compact', async (request) => {
    const compaction = ctx.get('compaction')
    if (!compaction) throw unavailable('compacting a session', 'compaction')
    const agent = await sessions.agent(idOf(request))
    if (agent.status === 'running') throw new HttpError(409, 'busy', `session ${agent.id} is running a turn; compact it when it is idle`)
    const result = await compaction.compact(agent, { reason: 'manual' })
    return { compacted: result.compacted, replaced: result.replaced, ...(result.error ? { error: result.error } : {}) }
  })

  server.route(ctx, 'POST', '/api/sessions/:id/fork', async (request) => {
    const id = idOf(request)
    const body = parseWith(ForkBody, (await request.body()) ?? {}, 'fork')
    if (!ctx.get('sessionPersistence')) throw unavailable('forking a session', 'session storage')
    const source = await sessions.snapshot(id)
    let forked: ReturnType<Context['sessions']['fork']>
    try {
      forked = ctx.sessions.fork(source, body.turn !== undefined ? { throughTurn: body.turn } : {})
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      if (body.turn !== undefined) throw new HttpError(400, 'bad-request', `turn: ${message}`)
      throw new HttpError(409, 'busy', message)
    }
    // Stored and closed: it opens like any other stored session, and resumes when sent to.
    await ctx.sessions.close(forked)
    changed()
    return new JsonReply(201, { sessionId: forked.id })
  })

  server.route(ctx, 'PATCH', '/api/sessions/:id', async (request) => {
    const body = parseWith(PatchBody, (await request.body()) ?? {}, 'session update')
    if (body.model) checkedModel(ctx, body.model)
    const titles = ctx.get('sessionTitles')
    const permission = ctx.get('permission')
    if (body.title !== undefined && !titles) throw unavailable('renaming a session', 'session-titles')
    if (body.permissionPreset && !permission) throw unavailable('permissionPreset', 'permission')
    if (body.network && !permission) throw unavailable('network', 'permission')
    const agent = await sessions.agent(idOf(request))
    if (body.model || body.reasoningEffort) {
      agent.options = { ...agent.options, ...(body.model ? { model: body.model } : {}), ...(body.reasoningEffort ? { reasoningEffort: body.reasoningEffort } : {}) }
    }
    if (body.permissionPreset) permission?.setPreset(agent.id, body.permissionPreset)
    if (body.network) permission?.setNetwork(agent.id, body.network)
    if (body.title !== undefined) {
      titles?.rename(agent.session, body.title)
      changed()
    }
    return {}
  })

  server.route(ctx, 'DELETE', '/api/sessions/:id', async (request) => {
    const id = idOf(request)
    const agent = sessions.live(id)
    const wasOpen = Boolean(agent ?? ctx.sessions.get(id))
    if (agent) await ctx.agents.dispose(agent)
    const open = ctx.sessions.get(id)
    if (open) await ctx.sessions.close(open)
    try {
      await mustExist(id)
    } catch (error) {
      if (wasOpen && error instanceof HttpError) {
        changed()
        return {}
      }
      throw error
    }
    const catalog = ctx.get('sessionCatalog')
    try {
      if (catalog) await catalog.remove(id)
      else await ctx.get('sessionPersistence')?.delete(id as SessionId)
    } catch (error) {
      if (error instanceof SessionBusyError) throw new HttpError(409, 'busy', error.message)
      throw error
    }
    changed()
    return {}
  })
}
