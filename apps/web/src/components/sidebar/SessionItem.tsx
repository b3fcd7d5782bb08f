import type { SessionSummary } from '@dsh/web-client'
import { clsx } from 'clsx'
import { useState } from 'react'
import { useApp } from '../../hooks/app-context.ts'
import { baseName, formatWhen } from '../../lib/format.ts'
import { hrefOf, navigate } from '../../lib/route.ts'
import { useStore } from '../../lib/store.ts'
import { ConfirmDialog } from '../dialogs/ConfirmDialog.tsx'
import { RenameInput } from './RenameInput.tsx'
import { SessionMenu } from './SessionMenu.tsx'
import styles from './SessionItem.module.css'

/** A session link with its running state, pending requests, and rename / fork / delete. */
export function SessionItem({
  session,
  current,
  showWorkspace,
}: {
  session: SessionSummary
  current: boolean
  showWorkspace?: boolean
}) {
  const app = useApp()
  const pending = useStore(app.requests).filter((r) => r.sessionId === session.sessionId).length
  const [renaming, setRenaming] = useState(false)
  const [deleting, setDeleting] = useState(false)
  const title = session.title || 'Untitled session'

  const rename = async (next: string) => {
    setRenaming(false)
    if (!next || next === session.title) return
    try {
      await app.api.updateSession(session.sessionId, { title: next })
      await app.sessions.refresh()
    } catch (e) {
      app.toasts.error(e, 'Renaming')
    }
  }

  const fork = async () => {
    try {
      const { sessionId } = await app.api.fork(session.sessionId)
      await app.sessions.refresh()
      navigate({ page: 'session', sessionId })
    } catch (e) {
      app.toasts.error(e, 'Forking')
    }
  }

  const remove = async () => {
    setDeleting(false)
    try {
      await app.api.deleteSession(session.sessionId)
      if (current) navigate({ page: 'home', cwd: session.cwd })
      await app.sessions.refresh()
    } catch (e) {
      app.toasts.error(e, 'Deleting')
    }
  }

  return (
    <li className={clsx(styles.item, current && styles.current)} data-session-id={session.sessionId}>
      {renaming ? (
        <RenameInput initial={session.title ?? ''} onDone={(value) => void rename(value)} />
      ) : (
        <a
          className={styles.link}
          href={hrefOf({ page: 'session', sessionId: session.sessionId })}
          aria-current={current ? 'page' : undefined}
        >
          <span className={styles.title}>
            {session.running ? <span className={styles.running} role="img" aria-label="running" /> : null}
            {title}
          </span>
          <span className={styles.meta}>
            {showWorkspace ? `${baseName(session.cwd)} · ` : ''}
            {formatWhen(session.updatedAt)}
            {session.parentSession ? ' · fork' : ''}
            {session.openIn ? (
              <span
                className={styles.elsewhere}
                title={`dsh process ${session.openIn.pid} on ${session.openIn.host} has this session open. You can read it here; it takes messages once that one closes it.`}
              >
                {' · open in another dsh'}
              </span>
            ) : null}
          </span>
          {session.snippet ? <span className={styles.snippet}>{session.snippet}</span> : null}
        </a>
      )}
      {pending > 0 ? (
        <span className={styles.badge}>
          <span aria-hidden="true">{pending}</span>
          <span className="visually-hidden">{pending} waiting for you</span>
        </span>
      ) : null}
      {!renaming ? (
        <SessionMenu
          title={title}
          onRename={() => setRenaming(true)}
          onFork={() => void fork()}
          onDelete={() => setDeleting(true)}
        />
      ) : null}
      {deleting ? (
        <ConfirmDialog
          title={`Delete “${title}”?`}
          confirm="Delete"
          danger
          onConfirm={() => void remove()}
          onCancel={() => setDeleting(false)}
        >
          Its log is removed from disk. This cannot be undone.
        </ConfirmDialog>
      ) : null}
    </li>
  )
}
