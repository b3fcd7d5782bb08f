import { rewindSession } from '@dsh/checkpoints'
import { type PromptBlock, recentHistory, type SessionAccess, userMessage } from '@dsh/conversations'
import type { Context } from '@dsh/cordis'
import type { Message } from '@dsh/llm'
import type { SessionEvent } from '@dsh/session'
import { choice, type WebSettings } from '@dsh/user-settings'
import { z } from 'zod'
import { type ApiRequest, JsonReply, parseWith } from '@dsh/local-http'
import type { SocketHub } from './hub.ts'
import { withPresentation } from '@dsh/tools'
import { absolutePath, bodyOf, checkedSessionId, described, existingFolder, queryOf, type Route } from './requests.ts'

const base64 = /^[A-Za-z0-9+/]*={0,2}$/

const CreateBody = z
  .object({ cwd: z.string().min(1), ...choice })
  .partial()
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
  .refine((m) => m.text.trim() !== '' || (m.images?.length ?? 0) > 0, {
    message: 'must not be empty (give text or images)',
    path: ['text'],
  })

const ForkBody = z.object({ turn: z.number().int().min(1).optional() }).strict()

const RewindBody = z
  .object({
    to: z.string().min(1),
    restoreFiles: z.boolean().optional(),
    dryRun: z.boolean().optional(),
    force: z.boolean().optional(),
  })
  .strict()

const PatchBody = z
  .object({ title: z.string().trim().min(1, 'must not be empty').max(200), ...choice, planMode: z.boolean() })
  .partial()
  .strict()

const ListQuery = z.object({
  query: z.string().trim().optional(),
  cwd: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().optional(),
})

const DetailQuery = z.object({ tail: z.coerce.number().int().min(1).optional() })
const EventsQuery = z.object({ before: z.coerce.number().int().min(0) })

/** The session id of the path, or a 400 when it cannot name a session. */
function idOf(request: ApiRequest): string {
  return checkedSessionId(request.params.id as string)
}

/**
 * The session routes of API.md: list, create, read, send, cancel, compact,
 * fork, patch, delete. What they do is `ctx.conversations`'s; `route`
 * turns its errors into HTTP errors.
 */
export function applySessionRoutes(
  ctx: Context,
  route: Route,
  hub: SocketHub,
  sessions: SessionAccess,
  web: { launchCwd: string; defaults: () => WebSettings },
): void {
  const changed = () => hub.broadcast({ type: 'sessions-changed' })
  /** A session was made (created, forked, rewound): every tab's list changes; the answer is 201. */
  const made = (body: object) => {
    changed()
    return new JsonReply(201, body)
  }
  /** The live agent of the path's session, resumed if needed. */
  const agentOf = async (request: ApiRequest) => sessions.agent(idOf(request))
  const conversations = ctx.conversations
  /** The events as the browser gets them (`withPresentation`). */
  const displayed = (events: readonly SessionEvent[], cwd: string) =>
    events.map((event) => withPresentation(ctx.get('tools'), event, cwd))

  route('GET', '/api/sessions', async (request) => {
    const q = queryOf(ListQuery, request)
    const cwd = q.cwd ? absolutePath(q.cwd, 'cwd') : undefined
    return sessions.list({
      limit: q.limit,
      ...(cwd ? { cwd } : {}),
      ...(q.query ? { query: q.query } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
    })
  })

  route('POST', '/api/sessions', async (request) => {
    const body = await bodyOf(CreateBody, request, 'new session')
    // The web settings name the preset and network of new sessions (when the permission plugin can apply them).
    const defaults = ctx.get('permission') ? web.defaults() : {}
    const preset = body.permissionPreset ?? defaults.permissionPreset
    const network = body.network ?? defaults.network
    const cwd = body.cwd ? await existingFolder(body.cwd, 'cwd') : web.launchCwd
    const { model, reasoningEffort } = body
    const agent = await conversations.create({ cwd, model, reasoningEffort, preset, network })
    return made({ sessionId: agent.id })
  })

  route('GET', '/api/sessions/:id', async (request) => {
    const q = queryOf(DetailQuery, request)
    const id = idOf(request)
    // Both go through the recent reads: a stored log is read once.
    const [shown, view] = await Promise.all([
      conversations.show(id, { read: () => sessions.readLog(id) }),
      sessions.view(id),
    ])
    const history = q.tail ? recentHistory(view.events, q.tail) : { events: view.events }
    history.events = displayed(history.events, view.meta.cwd)
    return { session: described(shown), ...history }
  })

  route('GET', '/api/sessions/:id/events', async (request) => {
    const q = queryOf(EventsQuery, request)
    const { events, meta } = await sessions.view(idOf(request))
    return {
      events: displayed(
        events.filter((event) => event.seq < q.before),
        meta.cwd,
      ),
    }
  })

  /** The user message a body of text and images makes. */
  const messageOf = async (request: ApiRequest): Promise<Message> => {
    const body = parseWith(MessageBody, await request.body(), 'message')
    const content: PromptBlock[] = []
    if (body.text.trim()) content.push({ type: 'text', text: body.text })
    for (const image of body.images ?? []) content.push({ type: 'image', mediaType: image.mediaType, data: image.data })
    return userMessage(content)
  }

  // A message is a prompt of its own: it runs now, or is queued behind the running work (`queued: true`).
  route('POST', '/api/sessions/:id/messages', async (request) => {
    const message = await messageOf(request)
    const agent = await agentOf(request)
    let queued = false
    conversations
      .prompt(agent.id, message, { onQueued: () => (queued = true) })
      .catch((error: unknown) => ctx.logger('web-api').warn('a message to %s failed: %s', agent.id, String(error)))
    return new JsonReply(202, { queued })
  })

  // A steer joins the running turn at its next step; a session that runs no turn is refused (400).
  route('POST', '/api/sessions/:id/steer', async (request) => {
    const message = await messageOf(request)
    conversations.steer((await agentOf(request)).id, message)
    return new JsonReply(202, {})
  })

  route('POST', '/api/sessions/:id/cancel', async (request) => {
    await conversations.cancel(idOf(request))
    return {}
  })

  route('POST', '/api/sessions/:id/compact', async (request) => {
    return conversations.compact((await agentOf(request)).id)
  })

  route('POST', '/api/sessions/:id/fork', async (request) => {
    const id = idOf(request)
    const body = await bodyOf(ForkBody, request, 'fork')
    const fork = await conversations.fork(id, body.turn !== undefined ? { turn: body.turn } : {})
    // Closed: it opens like any other stored session, and resumes when sent to.
    await conversations.close(fork.id)
    return made({ sessionId: fork.id })
  })

  route('POST', '/api/sessions/:id/rewind', async (request) => {
    const id = idOf(request)
    const body = await bodyOf(RewindBody, request, 'rewind')
    // rewindSession closes the fork, like a fork here: it opens like any other stored session.
    const result = await rewindSession(ctx, id, body)
    return result.sessionId ? made(result) : result
  })

  route('PATCH', '/api/sessions/:id', async (request) => {
    const body = await bodyOf(PatchBody, request, 'session update')
    const agent = await agentOf(request)
    const { model, reasoningEffort, permissionPreset: preset, network, planMode: plan } = body
    await conversations.configure(agent.id, { model, reasoningEffort, preset, network, plan })
    if (body.title !== undefined) {
      await conversations.rename(agent.id, body.title)
      changed()
    }
    return {}
  })

  route('DELETE', '/api/sessions/:id', async (request) => {
    await conversations.delete(idOf(request))
    changed()
    return {}
  })
}
