import { clsx } from 'clsx'
import { useState } from 'react'
import { Icon } from '../common/Icon.tsx'
import styles from './MessageActions.module.css'
import { useMessageActions } from './message-actions.ts'

export interface MessageActionsProps {
  /** The text Copy puts on the clipboard. */
  text: string
  /** The turn Fork keeps up to (no fork while it is unknown). */
  turn?: number | undefined
  /** Rewind to before this message (user prompts only). */
  onRewind?: (() => void) | undefined
  align?: 'start' | 'end'
}

/** Copy, fork from here and rewind, under a message; shown on hover and focus. */
export function MessageActions({ text, turn, onRewind, align = 'start' }: MessageActionsProps) {
  const actions = useMessageActions()
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    await navigator.clipboard.writeText(text)
    setCopied(true)
    setTimeout(() => setCopied(false), 1500)
  }
  return (
    <div className={clsx(styles.actions, align === 'end' && styles.end)} role="toolbar" aria-label="Message actions">
      <button
        type="button"
        className={styles.button}
        aria-label="Copy message"
        title="Copy"
        onClick={() => void copy()}
      >
        <Icon name={copied ? 'check' : 'copy'} size={14} />
      </button>
      {actions && turn !== undefined ? (
        <button
          type="button"
          className={styles.button}
          aria-label="Fork from here"
          title="Fork: a new session with the conversation up to here"
          onClick={() => actions.fork(turn)}
        >
          <Icon name="fork" size={14} />
        </button>
      ) : null}
      {actions && onRewind ? (
        <button
          type="button"
          className={styles.button}
          aria-label="Rewind to before this message"
          title="Rewind: a new session from before this message, and the files as they were then"
          onClick={onRewind}
        >
          <Icon name="rewind" size={14} />
        </button>
      ) : null}
    </div>
  )
}
