import { writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import path from 'node:path'
import { format, parseArgs } from 'node:util'
import { Context } from '@dsh/cordis'
import { shippedModelInfo } from '@dsh/llm-deepseek/catalog'
import type { SessionId } from '@dsh/session'
import type { SessionHolder, SessionPersistence } from '@dsh/session-persistence'
import * as jsonl from '@dsh/session-persistence-jsonl'
import { meterUsage } from '@dsh/token-meter'
import type { ContextUse } from '@dsh/wire-types'
import { Config, storeOptions } from './config.ts'
import { digestEvents } from './digest.ts'
import { buildFromLogs, catchUpWithLogs } from './reindex.ts'
import { removeSessionTree } from './remove.ts'
import { renderRewind, rewindThroughSdk } from './rewind.ts'
import { openDatabase } from './schema.ts'
import { CatalogStore } from './store.ts'
import type { CatalogEntry } from './types.ts'
import { formatTime, oneLine, renderMarkdown, renderShow } from './transcript.ts'

export interface SessionsCommandOptions {
  /** The arguments after `dsh sessions`. */
  args: readonly string[]
  /** The harness home: logs under `sessions/`, the catalog at `catalog.sqlite`. */
  home: string
  /** Where relative paths (`--cwd`, `-o`) are resolved. */
  cwd: string
  writeOut(text: string): void
  writeErr(text: string): void
}

export const SESSIONS_HELP = `Usage: dsh sessions <command> [options]

Lists, searches, shows and exports the sessions stored under $DSH_HOME,
through the catalog ($DSH_HOME/catalog.sqlite, built from the logs when it
is missing, and brought up to date with the logs written since it was last
used). Works without booting a profile.

Commands:
  list [--cwd DIR] [--limit N] [--cursor C] [--all] [--json]
                              newest first; --all includes subagent sessions
  search <words...> [--cwd DIR] [--limit N] [--json]
                              sessions holding every word, best match first
  show <id>                   facts and the conversation, tool calls one line each
  export <id> [--format jsonl|markdown] [-o FILE]
                              the raw log (jsonl, the default) or a readable document
  delete <id...>              delete sessions (their logs and entries) with their
                              subagent sessions; refused for one a dsh has open
  rewind <id> --to <message> [--restore] [--dry-run] [--force] [--json]
                              fork the session before a user message (its id, or
                              1 for the first prompt); --restore also puts the files
                              back as they were then; --dry-run shows what would
                              change; files changed outside dsh stop a restore
                              unless --force (runs dsh --profile sdk)
  reindex                     rebuild the catalog from the logs
`

class UsageError extends Error {}

type Flags = Record<string, string | boolean | undefined>

function parse(
  command: string,
  args: readonly string[],
  options: Record<string, { type: 'string' | 'boolean'; short?: string }>,
) {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    })
    return { flags: values as Flags, positionals }
  } catch (error) {
    throw new UsageError(`sessions ${command}: ${(error as Error).message.split('. ')[0]}`)
  }
}

function limitOf(command: string, flags: Flags, max: number): number | undefined {
  const text = flags.limit
  if (text === undefined) return undefined
  const value = Number(text)
  if (typeof text !== 'string' || !/^\d+$/.test(text) || value < 1 || value > max) {
    throw new UsageError(
      `sessions ${command}: --limit needs a whole number from 1 to ${max}, got ${JSON.stringify(text)}`,
    )
  }
  return value
}

function noExtra(command: string, positionals: string[], allowed: number): void {
  const extra = positionals[allowed]
  if (extra !== undefined) throw new UsageError(`sessions ${command}: unexpected argument ${JSON.stringify(extra)}`)
}

function idOf(command: string, positionals: string[]): SessionId {
  const id = positionals[0]
  if (id === undefined || id === '')
    throw new UsageError(`sessions ${command}: give a session id (see dsh sessions list)`)
  noExtra(command, positionals, 1)
  return id as SessionId
}

function entryLine(entry: CatalogEntry & { openIn?: SessionHolder }): string {
  const label = entry.title ?? (entry.preview ? `"${entry.preview}"` : '(no prompt)')
  const messages = entry.userMessages + entry.assistantMessages
  const open = entry.openIn
    ? ` · open in process ${entry.openIn.pid}${entry.openIn.host === hostname() ? '' : ` on ${entry.openIn.host}`}`
    : ''
  return `${formatTime(entry.updatedAt)}  ${entry.sessionId}  ${oneLine(label, 80)}  · ${entry.cwd} · ${messages} message${messages === 1 ? '' : 's'}${open}`
}

/**
 * An entry with what its log says it cost and how full its context is
 * (`costUsd` only when its models are priced), read from the log: the
 * catalog keeps tokens, not prices.
 */
async function withUsage<T extends { sessionId: string }>(
  persistence: SessionPersistence,
  entry: T,
): Promise<T & { costUsd?: number; context?: ContextUse }> {
  const { events } = await persistence.open(entry.sessionId as SessionId)
  const { costUsd, context } = meterUsage(events, shippedModelInfo)
  return { ...entry, ...(costUsd !== undefined ? { costUsd } : {}), ...(context ? { context } : {}) }
}

/** The stores the command works on: the JSONL provider on a bare context, and the catalog's tables. */
async function openStores(options: SessionsCommandOptions) {
  const root = new Context()
  root.logger.exporter({
    export: (message) => {
      if (message.type === 'warn' || message.type === 'error') options.writeErr(`dsh: ${format(...message.args)}\n`)
    },
  })
  await root.plugin(jsonl, { root: path.join(options.home, 'sessions') })
  const persistence: SessionPersistence = root.sessionPersistence
  const config = Config({ path: path.join(options.home, 'catalog.sqlite') })
  let catalog: { store: CatalogStore; needsBuild: boolean } | undefined
  return {
    config,
    persistence,
    /**
     * The catalog, built from the logs first when it is missing, outdated or
     * `rebuild` is set, else caught up with the logs modified since it last was.
     */
    async catalog(rebuild = false): Promise<{ store: CatalogStore; built?: { sessions: number; ms: number } }> {
      const build = {
        concurrency: config.reindexConcurrency,
        batchSize: config.reindexBatch,
        onProblem: (message: string) => options.writeErr(`dsh: ${message}\n`),
      }
      if (!catalog) {
        const { db, needsBuild } = await openDatabase(config.path, {
          busyTimeoutMs: config.busyTimeoutMs,
          onReplace: (reason) => options.writeErr(`dsh: ${reason}\n`),
        })
        catalog = { store: new CatalogStore(db, storeOptions(config)), needsBuild }
        if (!needsBuild && !rebuild) await catchUpWithLogs(catalog.store, persistence, build)
      }
      if (!catalog.needsBuild && !rebuild) return { store: catalog.store }
      const started = performance.now()
      const sessions = await buildFromLogs(catalog.store, persistence, build)
      catalog.needsBuild = false
      return { store: catalog.store, built: { sessions: sessions ?? 0, ms: Math.round(performance.now() - started) } }
    },
    async close() {
      catalog?.store.close()
      await root.fiber.dispose()
    },
  }
}

type Stores = Awaited<ReturnType<typeof openStores>>

const COMMANDS: Record<
  string,
  (args: readonly string[], stores: Stores, options: SessionsCommandOptions) => Promise<void>
> = {
  async list(args, stores, { cwd, writeOut, writeErr }) {
    const { flags, positionals } = parse('list', args, {
      cwd: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      all: { type: 'boolean' },
      json: { type: 'boolean' },
    })
    noExtra('list', positionals, 0)
    const limit = limitOf('list', flags, stores.config.maxLimit)
    const { store } = await stores.catalog()
    const page = store.list({
      ...(typeof flags.cwd === 'string' ? { cwd: path.resolve(cwd, flags.cwd) } : {}),
      ...(limit ? { limit } : {}),
      ...(typeof flags.cursor === 'string' ? { cursor: flags.cursor } : {}),
      includeChildren: flags.all === true,
    })
    const sessions = await stores.persistence.withHolders(page.sessions)
    if (flags.json) {
      const metered = await Promise.all(sessions.map((entry) => withUsage(stores.persistence, entry)))
      return writeOut(`${JSON.stringify({ ...page, sessions: metered }, null, 2)}\n`)
    }
    for (const entry of sessions) writeOut(`${entryLine(entry)}\n`)
    if (page.sessions.length === 0) writeErr('dsh: no sessions\n')
    if (page.nextCursor) writeOut(`more: dsh sessions list --cursor ${page.nextCursor}\n`)
  },

  async search(args, stores, { cwd, writeOut, writeErr }) {
    const { flags, positionals } = parse('search', args, {
      cwd: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
    })
    const text = positionals.join(' ')
    if (!text.trim()) throw new UsageError('sessions search: give the words to search for')
    const limit = limitOf('search', flags, stores.config.maxLimit)
    const { store } = await stores.catalog()
    const hits = store.search(text, {
      ...(typeof flags.cwd === 'string' ? { cwd: path.resolve(cwd, flags.cwd) } : {}),
      ...(limit ? { limit } : {}),
    })
    const held = await stores.persistence.withHolders(hits)
    if (flags.json) return writeOut(`${JSON.stringify(held, null, 2)}\n`)
    for (const hit of held) writeOut(`${entryLine(hit)}\n    ${oneLine(hit.snippet, 200)}\n`)
    if (hits.length === 0) writeErr(`dsh: no session matches ${JSON.stringify(text)}\n`)
  },

  async show(args, stores, { writeOut }) {
    const { positionals } = parse('show', args, {})
    const id = idOf('show', positionals)
    const log = await stores.persistence.open(id)
    const { digest } = digestEvents(log.meta, log.events)
    const usage = meterUsage(log.events, shippedModelInfo)
    writeOut(renderShow(digest, log.events, log.file, await stores.persistence.holder(id), usage))
  },

  async export(args, stores, { cwd, writeOut, writeErr }) {
    const { flags, positionals } = parse('export', args, {
      format: { type: 'string' },
      output: { type: 'string', short: 'o' },
    })
    const id = idOf('export', positionals)
    const kind = flags.format ?? 'jsonl'
    if (kind !== 'jsonl' && kind !== 'markdown')
      throw new UsageError(`sessions export: --format must be jsonl or markdown, got ${JSON.stringify(kind)}`)
    let text: string
    if (kind === 'jsonl') text = await stores.persistence.export(id)
    else {
      const log = await stores.persistence.open(id)
      text = renderMarkdown(digestEvents(log.meta, log.events).digest, log.events)
    }
    if (typeof flags.output !== 'string') return writeOut(text)
    const file = path.resolve(cwd, flags.output)
    await writeFile(file, text, { mode: 0o600 })
    writeErr(`dsh: wrote ${file}\n`)
  },

  async delete(args, stores, { writeOut }) {
    const { positionals } = parse('delete', args, {})
    if (positionals.length === 0)
      throw new UsageError('sessions delete: give the ids of the sessions to delete (see dsh sessions list)')
    const { store } = await stores.catalog()
    for (const id of positionals) {
      const removed = await removeSessionTree(store, stores.persistence, id)
      const children = removed.length - 1
      writeOut(`deleted ${id}${children ? ` and its ${children} subagent session${children === 1 ? '' : 's'}` : ''}\n`)
    }
  },

  async rewind(args, stores, { cwd, home, writeOut }) {
    const { flags, positionals } = parse('rewind', args, {
      to: { type: 'string' },
      restore: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      force: { type: 'boolean' },
      json: { type: 'boolean' },
    })
    const id = idOf('rewind', positionals)
    if (typeof flags.to !== 'string' || !flags.to)
      throw new UsageError(
        'sessions rewind: give the message to go back to with --to (its id, or 1 for the first prompt)',
      )
    // An unknown id is reported here, before a dsh is started for the rewind.
    await stores.persistence.open(id)
    const dryRun = flags['dry-run'] === true
    const report = await rewindThroughSdk({
      sessionId: id,
      to: flags.to,
      restoreFiles: flags.restore === true,
      dryRun,
      force: flags.force === true,
      home,
      cwd,
    })
    writeOut(flags.json ? `${JSON.stringify(report, null, 2)}\n` : renderRewind(report, dryRun))
  },

  async reindex(args, stores, { writeOut }) {
    const { positionals } = parse('reindex', args, {})
    noExtra('reindex', positionals, 0)
    const { built } = await stores.catalog(true)
    writeOut(`indexed ${built?.sessions ?? 0} session(s) in ${built?.ms ?? 0} ms\n`)
  },
}

/**
 * `dsh sessions ...`: works on the stored logs and the catalog directly,
 * without booting a plugin tree. Resolves with the exit code: 0, or 1 after
 * printing `dsh: <what was wrong>` for bad arguments and unknown sessions.
 */
export async function sessionsCommand(options: SessionsCommandOptions): Promise<number> {
  const [name, ...rest] = options.args
  if (
    name === undefined ||
    name === 'help' ||
    name === '--help' ||
    name === '-h' ||
    rest.includes('--help') ||
    rest.includes('-h')
  ) {
    if (name === undefined) {
      options.writeErr(`dsh: sessions needs a command: ${Object.keys(COMMANDS).join(', ')}\n\n${SESSIONS_HELP}`)
      return 1
    }
    options.writeOut(SESSIONS_HELP)
    return 0
  }
  const run = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined
  if (!run) {
    options.writeErr(
      `dsh: unknown sessions command ${JSON.stringify(name)} (use ${Object.keys(COMMANDS).join(', ')})\n`,
    )
    return 1
  }
  let stores: Stores | undefined
  try {
    stores = await openStores(options)
    await run(rest, stores, options)
    return 0
  } catch (error) {
    options.writeErr(`dsh: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  } finally {
    await stores?.close()
  }
}
