import { useApp } from '../../hooks/app-context.ts'
import { useStore } from '../../lib/store.ts'
import { Icon } from './Icon.tsx'
import styles from './SidebarToggle.module.css'

/** Opens the sessions drawer when the window is too narrow for the sidebar. */
export function SidebarToggle() {
  const app = useApp()
  const open = useStore(app.sidebarOpen)
  return (
    <button
      type="button"
      className={styles.toggle}
      aria-label="Sessions"
      aria-expanded={open}
      onClick={() => app.sidebarOpen.set(!open)}
    >
      <Icon name="menu" size={18} />
    </button>
  )
}
