import styles from './Kbd.module.css'

/** A keyboard shortcut hint. */
export function Kbd({ children }: { children: string }) {
  return <kbd className={styles.kbd}>{children}</kbd>
}
