import { randomUUID } from 'node:crypto'
import { mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { type Context, Schema, Service, stringList, stringValue } from '@dsh/cordis'
import type {} from '@dsh/questions'
import { projectFolders } from '@dsh/system-prompt'
import { errorMessage } from '@dsh/tools'

declare module '@dsh/cordis' {
  interface Context {
    workspaceTrust: WorkspaceTrust
  }
}

export interface WorkspaceTrustConfig {
  file: string
  trustedFolders: string[]
  ask: boolean
}

export const Config: Schema<WorkspaceTrustConfig> = Schema.object({
  file: stringValue(
    'Where the folders the user trusted are remembered (JSON, 0600), e.g. $DSH_HOME/trusted-folders.json (the base bundle sets it); empty: nothing is remembered.',
  ),
  trustedFolders: stringList(
    'Folders trusted without asking (each covers the folders below it). Headless `--trust-workspace` adds the current directory.',
  ),
  ask: Schema.boolean()
    .default(true)
    .description('Ask the user (through the surface that answers questions) about a folder not yet trusted.'),
})

export const TRUST = 'Trust this folder'
export const DISTRUST = 'Do not trust it'

export interface TrustRequest {
  /** The session whose surface is asked. */
  sessionId: string
  /** What the folder's config would run, shown to the user, e.g. "hooks from .claude/settings.json". */
  what: string
  signal: AbortSignal
}

interface StoredTrust {
  version: 1
  folders: string[]
}

/**
 * `ctx.workspaceTrust`: whether the user trusts a folder to run what its own
 * config asks for (project MCP servers, project hooks). A folder is trusted
 * when it or a folder above it is in the config or was trusted by the user,
 * who is asked once per folder (per process when the answer is no) where a
 * surface can answer questions.
 */
export class WorkspaceTrust extends Service {
  private readonly settings: WorkspaceTrustConfig
  private readonly home: Context
  /** The answer, or the question still open, per folder asked about in this process. */
  private readonly asked = new Map<string, Promise<boolean>>()

  constructor(ctx: Context, config: WorkspaceTrustConfig) {
    super(ctx, 'workspaceTrust')
    this.home = ctx
    this.settings = config
  }

  /** The folder trust is decided for: the project root (the nearest folder with `.git`), else the folder itself. */
  folderOf(cwd: string): string {
    return canonical(projectFolders(cwd).root ?? cwd)
  }

  /** Whether the folder (or one above it) is trusted by config or by the user; never asks. */
  isTrusted(cwd: string): boolean {
    const folder = canonical(cwd)
    const trusted = [...this.settings.trustedFolders.map((entry) => canonical(entry)), ...this.remembered()]
    return trusted.some(
      (root) => folder === root || folder.startsWith(root.endsWith(path.sep) ? root : root + path.sep),
    )
  }

  /** Whether a user can be asked now (a surface answers questions and asking is on). */
  canAsk(): boolean {
    return this.settings.ask && this.home.get('questions')?.available() === true
  }

  /**
   * Whether the folder of `cwd` is trusted, asking the user when it is not yet
   * and someone can answer. A yes is remembered in `file`; a no holds until the
   * process ends. Concurrent requests for one folder share one question. Never
   * throws: a failed question counts as no.
   */
  async request(cwd: string, request: TrustRequest): Promise<boolean> {
    if (this.isTrusted(cwd)) return true
    const folder = this.folderOf(cwd)
    if (this.isTrusted(folder)) return true
    const earlier = this.asked.get(folder)
    if (earlier) return earlier
    if (!this.canAsk()) return false
    const answer = this.ask(folder, request)
    this.asked.set(folder, answer)
    return answer
  }

  /** Remembers the folder as trusted (in `file`, when set). */
  trust(cwd: string): void {
    const folder = canonical(cwd)
    if (!this.settings.file) return
    const folders = this.remembered()
    if (folders.includes(folder)) return
    const next: StoredTrust = { version: 1, folders: [...folders, folder].sort() }
    mkdirSync(path.dirname(this.settings.file), { recursive: true, mode: 0o700 })
    const temp = `${this.settings.file}.${process.pid}.${randomUUID()}.tmp`
    writeFileSync(temp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 })
    renameSync(temp, this.settings.file)
  }

  private async ask(folder: string, request: TrustRequest): Promise<boolean> {
    const questions = this.home.get('questions')
    if (!questions) return false
    try {
      const answers = await questions.ask(
        {
          sessionId: request.sessionId,
          callId: `workspace-trust-${randomUUID()}`,
          questions: [
            {
              header: 'Trust folder',
              question:
                `Do you trust the files in ${folder}? Its project config wants to run ${request.what}. ` +
                'Trust only folders whose contents you know: a trusted folder runs these commands on this machine.',
              options: [
                { label: TRUST, description: 'Run its project config now and in later sessions.' },
                { label: DISTRUST, description: 'Run none of it; ask again the next time dsh starts.' },
              ],
            },
          ],
        },
        request.signal,
      )
      const yes = answers.some((answer) => answer.selected.includes(TRUST))
      if (yes) this.trust(folder)
      return yes
    } catch (error) {
      this.home.logger.warn('workspace trust: asking about %s failed: %s', folder, errorMessage(error))
      return false
    }
  }

  /** The folders in `file`; a missing file is none, a malformed one is reported and counts as none. */
  private remembered(): string[] {
    if (!this.settings.file) return []
    let text: string
    try {
      text = readFileSync(this.settings.file, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      this.home.logger.warn('workspace trust: cannot read %s: %s', this.settings.file, errorMessage(error))
      return []
    }
    try {
      const parsed = JSON.parse(text) as Partial<StoredTrust>
      if (!Array.isArray(parsed.folders) || !parsed.folders.every((entry) => typeof entry === 'string'))
        throw new Error('"folders" must be a list of folder paths')
      return parsed.folders.filter((entry) => path.isAbsolute(entry))
    } catch (error) {
      this.home.logger.warn(
        'workspace trust: %s is not a trust file (%s); no folder counts as trusted by it',
        this.settings.file,
        errorMessage(error),
      )
      return []
    }
  }
}

/** The real, absolute path of a folder (as given, resolved, when it does not exist). */
function canonical(folder: string): string {
  const absolute = path.resolve(folder)
  try {
    return realpathSync(absolute)
  } catch {
    return absolute
  }
}

export const name = 'workspace-trust'

/** Provides `ctx.workspaceTrust`. */
export function apply(ctx: Context, config: WorkspaceTrustConfig) {
  ctx.plugin(WorkspaceTrust, config)
}
