import { clsx } from 'clsx'
import type { FileDiff } from '../../lib/diff.ts'
import styles from './DiffView.module.css'

/** A unified diff with old and new line numbers; lines keep their columns and scroll sideways. */
export function DiffView({ diff }: { diff: FileDiff }) {
  return (
    <div className={styles.diff} data-testid="diff">
      <div className={styles.header}>
        <span className={styles.path}>{diff.path}</span>
        <span className={styles.added}>+{diff.added}</span>
        <span className={styles.removed}>−{diff.removed}</span>
      </div>
      <div className={styles.scroller}>
        <table className={styles.table}>
          <tbody>
            {diff.lines.map((line, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a parsed diff is fixed and its lines hold no state; hunk and note lines have no number to key by
              <tr key={i} className={clsx(styles.line, styles[line.kind])}>
                <td className={styles.number}>{line.oldNo ?? ''}</td>
                <td className={styles.number}>{line.newNo ?? ''}</td>
                <td className={styles.sign} aria-hidden="true">
                  {line.kind === 'add' ? '+' : line.kind === 'del' ? '-' : ' '}
                </td>
                <td className={styles.code}>
                  {line.kind === 'add' ? <span className="visually-hidden">added: </span> : null}
                  {line.kind === 'del' ? <span className="visually-hidden">removed: </span> : null}
                  {line.text}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  )
}
