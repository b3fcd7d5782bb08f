/**
 * What a policy checked before a tool call ran: for each path of the call
 * (absolute, as written), the real location it resolved to. A permission
 * layer that decides before the tool runs records it here; the tool passes it
 * to `ctx.fs` as `expectReal`, so the call acts on that location or fails
 * with `PATH_CHANGED`, never on one the policy did not see.
 *
 * Kept in the session's shared `sessionState`, per call id, for the last
 * `KEEP` calls (a call the policy refused never comes to collect its entry).
 */

import { sharedMap } from '@dsh/cordis'

const KEY = 'fs:checked-paths'
const KEEP = 32

type Checked = Map<string, Map<string, string>>

function table(sessionState: Map<string, unknown>): Checked {
  return sharedMap(sessionState, KEY)
}

/** Records that the policy checked `absolute` of call `callId` as leading to `real`. */
export function recordChecked(
  sessionState: Map<string, unknown>,
  callId: string,
  absolute: string,
  real: string,
): void {
  const checked = table(sessionState)
  let paths = checked.get(callId)
  if (!paths) {
    paths = new Map()
    checked.set(callId, paths)
    for (const old of checked.keys()) {
      if (checked.size <= KEEP) break
      checked.delete(old)
    }
  }
  paths.set(absolute, real)
}

/** The real location the policy checked for `absolute` in call `callId`, if it checked one. */
export function checkedReal(sessionState: Map<string, unknown>, callId: string, absolute: string): string | undefined {
  return table(sessionState).get(callId)?.get(absolute)
}
