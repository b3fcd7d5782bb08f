import type { ReactNode } from 'react'
import { Button } from '../common/Button.tsx'
import styles from './ConfirmDialog.module.css'
import { Dialog, DialogActions } from './Dialog.tsx'

export function ConfirmDialog({
  title,
  confirm,
  danger,
  children,
  onConfirm,
  onCancel,
}: {
  title: string
  confirm: string
  danger?: boolean
  children: ReactNode
  onConfirm: () => void
  onCancel: () => void
}) {
  return (
    <Dialog title={title} onEscape={onCancel}>
      <p className={styles.text}>{children}</p>
      <DialogActions onCancel={onCancel} focusCancel>
        <Button variant={danger ? 'danger' : 'primary'} onClick={onConfirm}>
          {confirm}
        </Button>
      </DialogActions>
    </Dialog>
  )
}
