import type { SessionDetail } from '@dsh/web-client'

interface EarlyLoad {
  sessionId: string
  /** The parsed answer of `GET /api/sessions/:id`; undefined when it failed in any way. */
  detail: Promise<SessionDetail | undefined>
}

const slot = globalThis as { __dshEarlyLoad?: EarlyLoad }

/**
 * The load of `sessionId` that index.html started before this script
 * compiled (the session in the URL), handed out once.
 */
export function takeEarlyLoad(sessionId: string): Promise<SessionDetail | undefined> | undefined {
  const early = slot.__dshEarlyLoad
  if (early?.sessionId !== sessionId) return undefined
  slot.__dshEarlyLoad = undefined
  return early.detail
}
