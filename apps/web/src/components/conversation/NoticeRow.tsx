import { clsx } from 'clsx'
import type { NoticeNode } from '../../model/nodes.ts'
import styles from './NoticeRow.module.css'

export function NoticeRow({ node }: { node: NoticeNode }) {
  return (
    <div
      className={clsx(styles.notice, styles[node.tone])}
      data-node="notice"
      role={node.tone === 'error' ? 'alert' : undefined}
    >
      {node.code ? <span className={styles.code}>{node.code}</span> : null}
      <span>{node.text}</span>
    </div>
  )
}
