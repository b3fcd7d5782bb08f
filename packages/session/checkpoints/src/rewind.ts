import { ConversationError } from '@dsh/conversations'
import type { Context } from '@dsh/cordis'
import type { RewindOptions, RewindResult } from './service.ts'

/**
 * The rewind every surface offers: `ctx.checkpoints.rewind`, or `unavailable`
 * when the profile has no checkpoints plugin. The fork is closed afterwards
 * (it opens like any other stored session) unless `keepOpen`.
 */
export async function rewindSession(
  ctx: Context,
  sessionId: string,
  options: RewindOptions,
  { keepOpen = false }: { keepOpen?: boolean } = {},
): Promise<RewindResult> {
  const checkpoints = ctx.get('checkpoints')
  if (!checkpoints)
    throw new ConversationError('unavailable', 'rewind is not available: this profile has no checkpoints plugin')
  const result = await checkpoints.rewind(sessionId, options)
  if (result.sessionId && !keepOpen) await ctx.conversations.close(result.sessionId)
  return result
}
