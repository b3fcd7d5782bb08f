import type { DshApi, SessionDetail, SessionId } from '@dsh/web-client'

/**
 * Opening a session reads this many of its last events (whole turns) first;
 * the rest is read once they are on screen. index.html's early load asks for
 * the same number (vite.config.ts writes it in).
 */
export const RECENT_EVENTS = 200

export function readRecent(api: DshApi, id: SessionId): Promise<SessionDetail> {
  return api.getSession(id, { tail: RECENT_EVENTS })
}
