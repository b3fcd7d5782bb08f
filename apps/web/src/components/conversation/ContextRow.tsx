import { useRemembered } from '../../hooks/useRemembered.ts'
import type { ContextNode } from '../../model/nodes.ts'
import styles from './ContextRow.module.css'

/** A message a plugin added to the history (instructions, context, a compaction summary), collapsed. */
export function ContextRow({ node }: { node: ContextNode }) {
  const [open, setOpen] = useRemembered(`context:${node.key}`, false)
  return (
    <div className={styles.row} data-node="context">
      <button type="button" className={styles.toggle} aria-expanded={open} onClick={() => setOpen(!open)}>
        {node.form === 'summary' ? 'Summary of earlier messages' : `${node.form ?? 'Context'} from ${node.plugin}`}
      </button>
      {open ? <pre className={styles.body}>{node.text}</pre> : null}
    </div>
  )
}
