import type { ApprovalDecision, ApprovalRequest } from '@dsh/web-client'
import { type KeyboardEvent, useState } from 'react'
import { prettyArgs } from '../../lib/tool-args.ts'
import { toolDiff } from '../../lib/tool-diff.ts'
import { Button } from '../common/Button.tsx'
import { ErrorText } from '../common/ErrorText.tsx'
import { Kbd } from '../common/Kbd.tsx'
import { DiffView } from '../tools/DiffView.tsx'
import styles from './ApprovalDialog.module.css'
import { Dialog } from './Dialog.tsx'

export interface ApprovalDialogProps {
  request: ApprovalRequest
  onAnswer: (decision: ApprovalDecision, message?: string) => Promise<void>
}

/** Asks whether a tool call outside the permission preset may run. Enter allows once, S allows for the session, Esc rejects. */
export function ApprovalDialog({ request, onAnswer }: ApprovalDialogProps) {
  const [message, setMessage] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string>()
  const { name, arguments: args, presentation } = request.toolCall
  const summary = presentation?.title !== name ? (presentation?.title ?? '') : ''
  const diff = toolDiff(presentation)

  const answer = async (decision: ApprovalDecision) => {
    if (busy) return
    setBusy(true)
    setError(undefined)
    try {
      await onAnswer(decision, decision === 'reject' && message.trim() ? message.trim() : undefined)
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e))
      setBusy(false)
    }
  }

  const onKey = (event: KeyboardEvent<HTMLDialogElement>) => {
    const target = event.target as HTMLElement
    const typing = target.tagName === 'INPUT' || target.tagName === 'TEXTAREA'
    if (event.key === 'Enter' && !event.shiftKey) {
      if (target.tagName === 'BUTTON') return false
      void answer(typing ? 'reject' : 'allow-once')
      return true
    }
    if (!typing && (event.key === 's' || event.key === 'S') && !event.ctrlKey && !event.metaKey && !event.altKey) {
      void answer('allow-session')
      return true
    }
    return false
  }

  return (
    <Dialog title={`Allow ${name}?`} tone="warn" wide onEscape={() => void answer('reject')} onKey={onKey}>
      <p className={styles.reason}>{request.reason}</p>
      {presentation?.view === 'terminal' && presentation.command ? (
        <pre className={styles.command}>
          <span aria-hidden="true">$ </span>
          {presentation.command}
        </pre>
      ) : diff ? (
        <DiffView diff={diff} />
      ) : (
        <details className={styles.args} open={!summary}>
          <summary>{summary || 'Arguments'}</summary>
          <pre>{prettyArgs(args)}</pre>
        </details>
      )}
      <p className={styles.preset}>
        Permission preset: <strong>{request.preset}</strong>
      </p>
      <label className={styles.messageLabel}>
        Message to the model if you reject (optional)
        <input
          className={styles.message}
          value={message}
          onChange={(e) => setMessage(e.target.value)}
          placeholder="Why not, or what to do instead"
        />
      </label>
      <ErrorText error={error} />
      <div className={styles.actions}>
        <Button variant="primary" data-autofocus disabled={busy} onClick={() => void answer('allow-once')}>
          Allow once <Kbd>Enter</Kbd>
        </Button>
        <Button disabled={busy} onClick={() => void answer('allow-session')}>
          Allow for this session <Kbd>S</Kbd>
        </Button>
        <Button variant="ghost" disabled={busy} onClick={() => void answer('reject')}>
          Reject <Kbd>Esc</Kbd>
        </Button>
      </div>
    </Dialog>
  )
}
