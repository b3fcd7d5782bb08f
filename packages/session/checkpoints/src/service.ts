import { realpath, stat, unlink } from 'node:fs/promises'
import path from 'node:path'
import type { Agent } from '@dsh/agent'
import { ConversationError } from '@dsh/conversations'
import { type Context, Service } from '@dsh/cordis'
import type { Session, SessionEvent, SessionId } from '@dsh/session'
import type {} from '@dsh/subprocess'
import { type ChangedFile, ShadowRepo, type ShadowOptions } from './git.ts'

declare module '@dsh/cordis' {
  interface Context {
    checkpoints: Checkpoints
  }
}

export const CHECKPOINT_EVENT = 'checkpoint/created'

/** The data of a `checkpoint/created` event: the workspace as it was before `turn` started changing it. */
export interface CheckpointEvent {
  /** The snapshot commit in the workspace's shadow repository. */
  commit: string
  turn: number
  /** The user message that started the turn. */
  messageId: string
}

declare module '@dsh/session' {
  interface SessionEventMap {
    'checkpoint/created': CheckpointEvent
  }
}

export interface RewindOptions {
  /** The user message to go back to: its id, or its number among the session's prompts (1 = the first). */
  to: string
  /** Put the files back as they were before that message (default false: only the conversation forks). */
  restoreFiles?: boolean
  /** Only report what would change; nothing is forked or written. */
  dryRun?: boolean
  /** Overwrite files that changed outside dsh since the snapshot. */
  force?: boolean
}

export interface RewindResult {
  /** The new session, forked before the message (absent on a dry run). */
  sessionId?: string
  messageId: string
  turn: number
  /** The snapshot the files come from; absent when dsh changed no file from that message on. */
  checkpoint?: string
  /** How each file differs now from the snapshot (restoring undoes these). */
  changes: ChangedFile[]
  /** Files among `changes` that changed outside dsh since the snapshot. */
  conflicts: string[]
  /** Whether the files were put back. */
  restored: boolean
  /** With `restored`: a snapshot of the files just before they were put back, in the same shadow repository. */
  backup?: string
}

/** What the commit messages of the shadow repository's chain say: a commit `pre` a turn, `post` it, or `rewind`. */
const preMessage = (session: string, turn: number) => `pre ${session} ${turn}`
const postMessage = (session: string, turn: number) => `post ${session} ${turn}`

/**
 * `ctx.checkpoints`: snapshots of a session's workspace before each turn that
 * changes it, and rewind: fork the conversation before a user message and,
 * if asked, put the files back.
 */
export class Checkpoints extends Service {
  static inject = ['sessions', 'subprocess']
  private readonly home: Context
  private readonly repos = new Map<string, ShadowRepo>()
  /** One git operation at a time per workspace (they share the shadow index). */
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(
    ctx: Context,
    private readonly options: ShadowOptions,
  ) {
    super(ctx, 'checkpoints')
    this.home = ctx
    ctx.sessions.registerEventType(ctx, CHECKPOINT_EVENT)
  }

  private async repo(cwd: string): Promise<ShadowRepo> {
    const workspace = await realpath(cwd)
    let repo = this.repos.get(workspace)
    if (!repo) {
      repo = new ShadowRepo(this.home.subprocess, workspace, this.options)
      this.repos.set(workspace, repo)
    }
    return repo
  }

  private serial<T>(repo: ShadowRepo, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(repo.dir) ?? Promise.resolve()
    const next = previous.then(work, work)
    this.queues.set(
      repo.dir,
      next.catch(() => {}),
    )
    return next
  }

  /** Records the workspace before `turn` changes it and logs `checkpoint/created`. */
  async before(session: Session, turn: number, messageId: string): Promise<string> {
    const repo = await this.repo(session.meta.cwd)
    const commit = await this.serial(repo, async () =>
      repo.commit(await repo.writeTree(), preMessage(session.id, turn)),
    )
    session.append(CHECKPOINT_EVENT, { commit, turn, messageId }, { ignorable: true })
    return commit
  }

  /** Records the workspace after dsh changed it in `turn`, so later edits by others can be told apart. */
  async after(session: Session, turn: number): Promise<void> {
    const repo = await this.repo(session.meta.cwd)
    await this.serial(repo, async () => repo.commit(await repo.writeTree(), postMessage(session.id, turn)))
  }

  /**
   * Forks session `id` before one of its user messages and, with
   * `restoreFiles`, puts the workspace back as it was then. A dry run reports
   * the changes and conflicts only. Conflicts stop a restore unless `force`.
   */
  async rewind(id: string, options: RewindOptions): Promise<RewindResult> {
    const conversations = this.conversations()
    const events = await conversations.events(id)
    const target = findPrompt(id, events, options.to)
    const live = this.home.get('agents')?.get(id)
    if (live?.status === 'running' && !options.dryRun)
      throw new ConversationError('busy', `session ${id} is running a turn; cancel it or wait before rewinding`, {
        sessionId: id,
      })
    const checkpoint = events.find(
      (e): e is SessionEvent<'checkpoint/created'> =>
        e.type === CHECKPOINT_EVENT && (e as SessionEvent<'checkpoint/created'>).data.turn >= target.turn,
    )?.data
    const base: RewindResult = {
      messageId: target.messageId,
      turn: target.turn,
      changes: [],
      conflicts: [],
      restored: false,
    }
    let plan: Plan | undefined
    const cwd = checkpoint || options.restoreFiles ? await this.workspaceOf(id) : undefined
    if (checkpoint && cwd) {
      plan = await this.plan(id, cwd, checkpoint.commit)
      base.checkpoint = checkpoint.commit
      base.changes = plan.changes
      base.conflicts = plan.conflicts
    }
    if (options.dryRun) return base
    if (options.restoreFiles && plan?.changes.length) {
      if (plan.conflicts.length && !options.force)
        throw new ConversationError(
          'invalid',
          `these files changed outside dsh since the snapshot and would be overwritten: ${plan.conflicts.join(', ')}; ` +
            'rewind with force to overwrite them, or without restoring files',
          { sessionId: id, field: 'force' },
        )
      base.backup = await this.put(plan)
      base.restored = true
    }
    const fork = await this.forkBefore(id, events, target.turn)
    return { ...base, sessionId: fork.id }
  }

  private conversations() {
    const conversations = this.home.get('conversations')
    if (!conversations)
      throw new ConversationError('unavailable', 'rewind is not available: this profile has no conversations plugin')
    return conversations
  }

  private async workspaceOf(id: string): Promise<string> {
    const { cwd } = await this.conversations().show(id)
    const folder = await stat(cwd).catch(() => undefined)
    if (!folder?.isDirectory())
      throw new ConversationError(
        'invalid',
        `the workspace of session ${id}, ${cwd}, is missing or was moved; its files cannot be compared or restored`,
        { sessionId: id, field: 'cwd' },
      )
    return cwd
  }

  private async plan(id: string, cwd: string, commit: string): Promise<Plan> {
    const repo = await this.repo(cwd)
    if (!(await repo.exists(commit)))
      throw new ConversationError(
        'invalid',
        `snapshot ${commit} of session ${id} is not in ${repo.dir} (was the checkpoint folder removed?)`,
        { sessionId: id },
      )
    return this.serial(repo, async () => {
      const tree = await repo.writeTree()
      const changes = await repo.diff(commit, tree)
      // Changes made by anything but dsh: what happened between a `post` snapshot and the next one, and since the last.
      const outside = new Set<string>()
      for (const step of await repo.since(commit))
        if (!step.message.startsWith('post ')) for (const p of step.paths) outside.add(p)
      const head = await repo.head()
      if (head) for (const change of await repo.diff(head, tree)) outside.add(change.path)
      const conflicts = changes.filter((c) => outside.has(c.path)).map((c) => c.path)
      return { repo, commit, tree, changes, conflicts }
    })
  }

  /** Puts the snapshot's files back; returns the commit that keeps the files as they were just before. */
  private async put(plan: Plan): Promise<string> {
    const { repo, commit, tree, changes } = plan
    return this.serial(repo, async () => {
      const backup = await repo.commit(tree, `rewind backup to ${commit}`)
      await repo.restore(
        commit,
        changes.filter((c) => c.change !== 'added').map((c) => c.path),
      )
      for (const c of changes) if (c.change === 'added') await unlink(path.join(repo.workspace, c.path)).catch(() => {})
      await repo.commit(await repo.writeTree(), `post rewind ${commit}`)
      return backup
    })
  }

  /** A fork holding the turns before `turn`: `conversations.fork` at the turn before, or the events before the first. */
  private async forkBefore(id: string, events: readonly SessionEvent[], turn: number): Promise<Agent> {
    const previous = events.findLast(
      (e) => e.type === 'turn/end' && (e as SessionEvent<'turn/end'>).data.turn < turn,
    ) as SessionEvent<'turn/end'> | undefined
    if (previous) return this.conversations().fork(id, { turn: previous.data.turn })
    const start = events.findIndex((e) => e.type === 'turn/start')
    const { cwd } = await this.conversations().show(id)
    const copy = this.home.sessions.create({
      cwd,
      forkedFrom: id as SessionId,
      seed: events.slice(0, start < 0 ? events.length : start),
    })
    await this.home.sessions.close(copy)
    return (await this.conversations().resume(copy.id)).agent
  }
}

interface Plan {
  repo: ShadowRepo
  commit: string
  tree: string
  changes: ChangedFile[]
  conflicts: string[]
}

interface Prompt {
  messageId: string
  turn: number
}

/** The user message `to` names (an id, or a 1-based number among the prompts that started turns). */
function findPrompt(id: string, events: readonly SessionEvent[], to: string): Prompt {
  const prompts: Prompt[] = []
  let turn: number | undefined
  let started = false
  const steered = new Map<string, number>()
  for (const event of events) {
    if (event.type === 'turn/start') {
      turn = (event as SessionEvent<'turn/start'>).data.turn
      started = false
    } else if (event.type === 'user/message' && turn !== undefined) {
      const { message } = (event as SessionEvent<'user/message'>).data
      if (message.source.kind !== 'user') continue
      if (!started) prompts.push({ messageId: message.id, turn })
      else steered.set(message.id, turn)
      started = true
    }
  }
  const byId = prompts.find((p) => p.messageId === to)
  if (byId) return byId
  if (/^[1-9]\d*$/.test(to)) {
    const byNumber = prompts[Number(to) - 1]
    if (byNumber) return byNumber
  }
  const during = steered.get(to)
  if (during !== undefined) {
    const start = prompts.find((p) => p.turn === during)
    throw new ConversationError(
      'invalid',
      `message ${to} was sent while turn ${during} ran; rewind to the message that started it` +
        (start ? ` (${start.messageId})` : ''),
      { sessionId: id, field: 'to' },
    )
  }
  throw new ConversationError(
    'invalid',
    `session ${id} has no user message "${to}"; give a message id or a number from 1 to ${prompts.length}`,
    { sessionId: id, field: 'to' },
  )
}
