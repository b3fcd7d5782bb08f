import type { RewindResult, SessionId } from '@dsh/web-client'
import { useEffect, useState } from 'react'
import { useApp } from '../../hooks/app-context.ts'
import type { UserNode } from '../../model/nodes.ts'
import { Button } from '../common/Button.tsx'
import { ErrorText } from '../common/ErrorText.tsx'
import { Dialog, DialogActions } from './Dialog.tsx'
import styles from './RewindDialog.module.css'

/** What a restore does to a file, by how it changed since the snapshot. */
const RESTORE_VERB: Record<RewindResult['changes'][number]['change'], string> = {
  added: 'remove',
  modified: 'restore',
  deleted: 'recreate',
}

export interface RewindDialogProps {
  sessionId: SessionId
  node: UserNode
  onDone: (result: RewindResult) => void
  onCancel: () => void
}

/**
 * Rewinds the session to before a prompt. It first asks the server for a
 * dry run and lists the file changes a restore would make; files changed
 * outside dsh since the snapshot are listed as conflicts and are only
 * overwritten when the user ticks the box that says so.
 */
export function RewindDialog({ sessionId, node, onDone, onCancel }: RewindDialogProps) {
  const app = useApp()
  const [plan, setPlan] = useState<RewindResult>()
  const [error, setError] = useState<string>()
  const [overwrite, setOverwrite] = useState(false)
  const [busy, setBusy] = useState(false)

  useEffect(() => {
    app.api
      .rewind(sessionId, { to: node.messageId, restoreFiles: true, dryRun: true })
      .then(setPlan, (e: unknown) => setError(e instanceof Error ? e.message : String(e)))
  }, [app, sessionId, node.messageId])

  const run = async (restoreFiles: boolean) => {
    setBusy(true)
    setError(undefined)
    try {
      const force = restoreFiles && overwrite
      onDone(await app.api.rewind(sessionId, { to: node.messageId, restoreFiles, ...(force ? { force } : {}) }))
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e))
      setBusy(false)
    }
  }

  const conflicts = plan?.conflicts ?? []
  return (
    <Dialog title="Rewind to before this message" onEscape={onCancel} wide>
      <p className={styles.text}>
        A new session starts from before “{node.text.length > 80 ? `${node.text.slice(0, 80)}…` : node.text}”. This
        session stays as it is.
      </p>
      {!plan && !error ? <p className={styles.text}>Checking what would change…</p> : null}
      {plan ? (
        plan.changes.length === 0 ? (
          <p className={styles.text}>No file changed since then: only the conversation is rewound.</p>
        ) : (
          <>
            <p className={styles.text}>Restoring the files as they were then would:</p>
            <ul className={styles.changes} aria-label="File changes">
              {plan.changes.map((change) => (
                <li key={change.path} data-change={change.change}>
                  {RESTORE_VERB[change.change]} <code>{change.path}</code>{' '}
                  <span className={styles.kind}>({change.change} since)</span>
                  {conflicts.includes(change.path) ? (
                    <span className={styles.conflict}> changed outside dsh</span>
                  ) : null}
                </li>
              ))}
            </ul>
          </>
        )
      ) : null}
      {conflicts.length > 0 ? (
        <div className={styles.conflicts} role="alert">
          <p>
            {conflicts.length === 1 ? 'One file was' : `${conflicts.length} files were`} changed outside dsh since the
            snapshot: {conflicts.join(', ')}.
          </p>
          <label>
            <input type="checkbox" checked={overwrite} onChange={(e) => setOverwrite(e.target.checked)} /> Overwrite{' '}
            {conflicts.length === 1 ? 'it' : 'them'} too
          </label>
        </div>
      ) : null}
      <ErrorText error={error} />
      <DialogActions onCancel={onCancel} focusCancel>
        {plan && plan.changes.length > 0 ? (
          <Button variant="primary" disabled={busy || (conflicts.length > 0 && !overwrite)} onClick={() => run(true)}>
            Rewind and restore files
          </Button>
        ) : null}
        <Button disabled={busy || !plan} onClick={() => run(false)}>
          Rewind the conversation only
        </Button>
      </DialogActions>
    </Dialog>
  )
}
