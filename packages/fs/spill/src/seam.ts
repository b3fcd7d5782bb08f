import { providerService } from '@dsh/cordis'

declare module '@dsh/cordis' {
  interface Context {
    spill: SpillStore
  }
}

/** Text too large to hand the model whole, to be kept where it can page through it. */
export interface SpillRequest {
  /** The session the text belongs to; each session gets its own folder. */
  sessionId: string
  text: string
  /** A short hint of what the text is (`grep`, `bash-stdout`); becomes part of the file name. */
  label: string
}

/** Where the text went. */
export interface SpillFile {
  /** Absolute path of the file; the model reads it with the `read` tool. */
  path: string
  /** Size of the file in bytes (UTF-8). */
  bytes: number
}

/**
 * `ctx.spill`: keeps large tool output in private files the model can page
 * through with `read`. Providers keep the files unreadable to other users.
 */
export abstract class SpillStore extends providerService('spill') {
  /** Stores `text` in a new file and says where. Rejects when the text cannot be stored. */
  abstract save(request: SpillRequest): Promise<SpillFile>
}
