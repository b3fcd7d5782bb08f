import { Context } from '@dsh/cordis'
import * as sessionPlugin from '@dsh/session'
import type { Session, SessionEvent } from '@dsh/session'
import { afterEach, describe, expect, it } from 'vitest'
import { EventFeed, type SessionAccess } from '../src/index.ts'

const roots: Context[] = []
afterEach(async () => {
  for (const root of roots.splice(0)) await root.fiber.dispose()
})

/** A real session store with one open session holding three turns' starts (seq 0, 1, 2). */
async function open(): Promise<{ root: Context; session: Session }> {
  const root = new Context()
  roots.push(root)
  await root.plugin(sessionPlugin)
  const session = root.sessions.create({ cwd: '/work' })
  for (const turn of [1, 2, 3]) session.append('turn/start', { turn })
  return { root, session }
}

/**
 * The access a surface has, reading the live log; `during` runs while the
 * read is under way (as a stored log's read is asynchronous).
 */
const accessTo = (root: Context, during: () => void = () => {}) =>
  ({
    async view(id: string) {
      const session = root.sessions.get(id) as Session
      const view = { meta: session.meta, events: [...root.sessions.publishedEvents(session)] }
      await Promise.resolve()
      during()
      return view
    },
  }) as unknown as SessionAccess

describe('EventFeed', () => {
  it('replays after the start point, then delivers live events once each, also those published during the read', async () => {
    const { root, session } = await open()
    const delivered: number[] = []
    const feed = new EventFeed(root, session.id, 0, (event: SessionEvent) => delivered.push(event.seq))
    const published = (event: SessionEvent) => feed.push(event)
    root.on('session/published', (_, event) => published(event))
    const read = await feed.start(
      accessTo(root, () => session.append('turn/start', { turn: 4 })),
      () => true,
    )
    // The open session's log is read again at the switch, so the event published during the read is in it.
    expect(read?.events.map((e) => e.seq)).toEqual([0, 1, 2, 3])
    session.append('turn/start', { turn: 5 })
    await new Promise((resolve) => setImmediate(resolve))
    expect(delivered).toEqual([1, 2, 3, 4])
    expect(feed.live).toBe(true)
  })

  it('fills a gap in live delivery from the live log', async () => {
    const { root, session } = await open()
    const delivered: number[] = []
    const feed = new EventFeed(root, session.id, -1, (event: SessionEvent) => delivered.push(event.seq))
    await feed.start(accessTo(root), () => true)
    session.append('turn/start', { turn: 4 })
    const last = session.append('turn/start', { turn: 5 })
    feed.push(last)
    feed.push(last)
    expect(delivered).toEqual([0, 1, 2, 3, 4])
  })

  it('delivers nothing when the watcher left during the read, and nothing live before the replay', async () => {
    const { root, session } = await open()
    const delivered: number[] = []
    const feed = new EventFeed(root, session.id, -1, (event: SessionEvent) => delivered.push(event.seq))
    feed.push(session.append('turn/start', { turn: 4 }))
    expect(await feed.start(accessTo(root), () => false)).toBeUndefined()
    expect(delivered).toEqual([])
    expect(feed.live).toBe(false)
  })
})
