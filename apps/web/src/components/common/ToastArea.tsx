import { clsx } from 'clsx'
import { useApp } from '../../hooks/app-context.ts'
import { useStore } from '../../lib/store.ts'
import { Icon } from './Icon.tsx'
import styles from './ToastArea.module.css'

export function ToastArea() {
  const app = useApp()
  const toasts = useStore(app.toasts)
  return (
    <div className={styles.area} role="status" aria-live="polite">
      {toasts.map((toast) => (
        <div
          key={toast.id}
          className={clsx(styles.toast, styles[toast.tone])}
          role={toast.tone === 'error' ? 'alert' : undefined}
        >
          <span className={styles.text}>{toast.text}</span>
          <button
            type="button"
            className={styles.close}
            aria-label="Dismiss"
            onClick={() => app.toasts.dismiss(toast.id)}
          >
            <Icon name="close" size={14} />
          </button>
        </div>
      ))}
    </div>
  )
}
