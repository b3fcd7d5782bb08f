import type { Row } from '@dsh/loader/compose'

declare module '@dsh/cordis' {
  interface Context {
    /** The booted profile, and how to compose its layers again (for live reload). */
    profileContext: ProfileContext
  }
}

export interface ProfileContext {
  name: string
  dir: string
  home: string
  /** The user patch files a live reload watches (profile patch, home patch); they may not exist yet. */
  watchFiles: readonly string[]
  /** Re-reads the user patch files and composes the tree again. Throws a ConfigError on a bad layer. */
  recompose(): Promise<Row[]>
}
