import { clsx } from 'clsx'
import { type KeyboardEvent, type ReactNode, useEffect, useRef } from 'react'
import { Button } from '../common/Button.tsx'
import styles from './Dialog.module.css'

export interface DialogProps {
  title: string
  /** Escape (and the close button): reject, cancel, dismiss. */
  onEscape: () => void
  children: ReactNode
  wide?: boolean
  tone?: 'default' | 'warn'
  /** Extra keys handled while the dialog has focus; return true when handled. */
  onKey?: (event: KeyboardEvent<HTMLDialogElement>) => boolean
  className?: string
}

const FOCUSABLE =
  'button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])'

/**
 * A modal dialog: the page behind is inert, focus starts on the element
 * marked `data-autofocus` (else the first control), Tab stays inside, Escape
 * calls `onEscape`, and focus returns where it was on close.
 */
export function Dialog({ title, onEscape, children, wide, tone = 'default', onKey, className }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null)
  const onEscapeRef = useRef(onEscape)
  onEscapeRef.current = onEscape

  useEffect(() => {
    const dialog = ref.current
    if (!dialog) return
    const previous = document.activeElement as HTMLElement | null
    dialog.showModal()
    const first = dialog.querySelector<HTMLElement>('[data-autofocus]') ?? dialog.querySelector<HTMLElement>(FOCUSABLE)
    first?.focus()
    const onCancel = (event: Event) => {
      event.preventDefault()
      onEscapeRef.current()
    }
    dialog.addEventListener('cancel', onCancel)
    return () => {
      dialog.removeEventListener('cancel', onCancel)
      dialog.close()
      previous?.focus?.()
    }
  }, [])

  const onKeyDown = (event: KeyboardEvent<HTMLDialogElement>) => {
    if (onKey?.(event)) {
      event.preventDefault()
      return
    }
    if (event.key !== 'Tab') return
    const items = [...(ref.current?.querySelectorAll<HTMLElement>(FOCUSABLE) ?? [])]
    const first = items[0]
    const last = items[items.length - 1]
    if (!first || !last) return
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault()
      last.focus()
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault()
      first.focus()
    }
  }

  return (
    <dialog
      ref={ref}
      className={clsx(styles.dialog, wide && styles.wide, tone === 'warn' && styles.warn, className)}
      aria-label={title}
      onKeyDown={onKeyDown}
    >
      <header className={styles.header}>
        <h2 className={styles.title}>{title}</h2>
      </header>
      <div className={styles.body}>{children}</div>
    </dialog>
  )
}

/**
 * A dialog's row of buttons, ending in Cancel. `focusCancel` starts focus on
 * Cancel, for dialogs whose other buttons act at once (rewind, delete).
 */
export function DialogActions({
  onCancel,
  focusCancel,
  children,
}: {
  onCancel: () => void
  focusCancel?: boolean
  children: ReactNode
}) {
  return (
    <div className={styles.actions}>
      {children}
      <Button variant="ghost" data-autofocus={focusCancel || undefined} onClick={onCancel}>
        Cancel
      </Button>
    </div>
  )
}
