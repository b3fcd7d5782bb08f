import { createHash, randomBytes } from 'node:crypto'
import { chmod, lstat, mkdir, mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type Context, Schema, Service } from '@dsh/cordis'
import { type SpillFile, type SpillRequest, SpillStore } from './seam.ts'

export interface LocalSpillConfig {
  /** Absolute folder for the files; default a fresh `<tmpdir>/dsh-spill-<random>`. */
  root?: string
  /** Leave the files in place when the plugin is disposed. */
  keepOnDispose: boolean
}

export const Config: Schema<LocalSpillConfig> = Schema.object({
  root: Schema.string().description(
    'Absolute folder to keep spilled output in (made 0700). Default: a fresh private folder `dsh-spill-<random>` under the system temp folder.',
  ),
  keepOnDispose: Schema.boolean()
    .default(false)
    .description('Keep the spilled files when the plugin stops. By default they are removed.'),
})

const FOLDER_MODE = 0o700
const FILE_MODE = 0o600

/** Turns a label into something safe inside a file name. */
function slug(label: string): string {
  return label
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 32)
}

/** Makes sure `folder` is a real folder (not a symlink someone planted) with mode 0700. */
async function privateFolder(folder: string): Promise<void> {
  const info = await lstat(folder)
  if (info.isSymbolicLink() || !info.isDirectory()) throw new Error(`spill folder ${folder} is not a plain folder`)
  if (typeof process.getuid === 'function' && info.uid !== process.getuid())
    throw new Error(`spill folder ${folder} belongs to another user`)
  await chmod(folder, FOLDER_MODE)
}

/**
 * `ctx.spill` on the local disk: `<root>/session-<hash of the session id>/<random hex>-<label>.txt`.
 * Folders are 0700 and files 0600, created exclusively (`wx`), so nobody
 * else can read them or plant a link in their place. Everything this
 * provider created is removed when it is disposed, unless `keepOnDispose`.
 */
export class LocalSpillStore extends SpillStore {
  static Config = Config

  /**
   * The folder holding the session folders: a configured root once the
   * plugin has started, the default temp folder once the first file is saved.
   */
  root = ''
  private readonly settings: LocalSpillConfig
  private createdRoot = false
  private readonly sessionFolders = new Map<string, Promise<string>>()
  private readonly pending = new Set<Promise<unknown>>()
  private closed = false
  private ready: Promise<void> | undefined

  constructor(ctx: Context, config: LocalSpillConfig) {
    super(ctx)
    this.settings = { keepOnDispose: config?.keepOnDispose ?? false, root: config?.root }
    ctx.effect(() => () => this.close(), 'spill files')
  }

  /** A configured root is made at start, so that a bad one fails the row; the default temp folder waits for the first file. */
  async [Service.init](): Promise<void> {
    if (!this.settings.root) return
    this.ready = this.prepareRoot()
    await this.ready
  }

  private async prepareRoot(): Promise<void> {
    const configured = this.settings.root
    if (configured === undefined || configured === '') {
      this.root = await mkdtemp(path.join(tmpdir(), 'dsh-spill-'))
      this.createdRoot = true
    } else {
      if (!path.isAbsolute(configured))
        throw new Error(`spill: root must be an absolute path, got ${JSON.stringify(configured)}`)
      this.root = path.resolve(configured)
      // mkdir returns the first folder it created: undefined when the root was already there.
      this.createdRoot = (await mkdir(this.root, { recursive: true, mode: FOLDER_MODE })) !== undefined
    }
    await privateFolder(this.root)
  }

  async save(request: SpillRequest): Promise<SpillFile> {
    if (request === null || typeof request !== 'object')
      throw new TypeError('spill: save() needs { sessionId, text, label }')
    const { sessionId, text, label } = request
    if (typeof sessionId !== 'string' || sessionId === '')
      throw new TypeError('spill: sessionId must be a non-empty string')
    if (typeof text !== 'string') throw new TypeError('spill: text must be a string')
    if (typeof label !== 'string') throw new TypeError('spill: label must be a string')
    if (this.closed) throw new Error('spill: the store has been disposed')
    const work = this.write(sessionId, text, label)
    this.pending.add(work)
    try {
      return await work
    } finally {
      this.pending.delete(work)
    }
  }

  private async write(sessionId: string, text: string, label: string): Promise<SpillFile> {
    if (!this.ready) {
      const ready = this.prepareRoot()
      ready.catch(() => {
        if (this.ready === ready) this.ready = undefined // the next save tries again
      })
      this.ready = ready
    }
    await this.ready
    const folder = await this.sessionFolder(sessionId)
    const suffix = slug(label)
    const file = path.join(folder, `${randomBytes(16).toString('hex')}${suffix ? `-${suffix}` : ''}.txt`)
    const data = Buffer.from(text, 'utf8')
    const handle = await open(file, 'wx', FILE_MODE)
    try {
      await handle.chmod(FILE_MODE)
      await handle.writeFile(data)
    } finally {
      await handle.close()
    }
    return { path: file, bytes: data.length }
  }

  /** The session's folder, created 0700 on first use. */
  private sessionFolder(sessionId: string): Promise<string> {
    let folder = this.sessionFolders.get(sessionId)
    if (!folder) {
      const name = `session-${createHash('sha256').update(sessionId).digest('hex').slice(0, 16)}`
      const target = path.join(this.root, name)
      folder = (async () => {
        try {
          await mkdir(target, { mode: FOLDER_MODE })
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        }
        await privateFolder(target)
        return target
      })()
      folder.catch(() => this.sessionFolders.delete(sessionId))
      this.sessionFolders.set(sessionId, folder)
    }
    return folder
  }

  /** Waits for saves in flight, then removes what this store created (unless asked to keep it). */
  private async close(): Promise<void> {
    this.closed = true
    await this.ready?.catch(() => {})
    await Promise.allSettled([...this.pending])
    if (this.settings.keepOnDispose || this.root === '') return
    try {
      if (this.createdRoot) {
        await rm(this.root, { recursive: true, force: true })
        return
      }
      // A configured folder that existed before is left in place; only our session folders go.
      const folders = await Promise.allSettled([...this.sessionFolders.values()])
      for (const folder of folders) {
        if (folder.status === 'fulfilled') await rm(folder.value, { recursive: true, force: true })
      }
    } catch (error) {
      this.home.logger.warn(
        'spill: could not remove %s: %s',
        this.root,
        error instanceof Error ? error.message : String(error),
      )
    }
  }
}
