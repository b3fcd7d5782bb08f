import { clsx } from 'clsx'
import { useRemembered } from '../../hooks/useRemembered.ts'
import type { ToolNode, ToolStatus } from '../../model/nodes.ts'
import { Chevron } from '../common/Chevron.tsx'
import { ToolBody } from './ToolBody.tsx'
import styles from './ToolCard.module.css'

const STATUS_LABEL: Record<ToolStatus, string> = {
  streaming: 'preparing',
  pending: 'waiting',
  running: 'running',
  done: 'done',
  error: 'failed',
  cancelled: 'cancelled',
}

/** One tool call: name, what it acts on, status, and (expanded) arguments and result. */
export function ToolCard({ node }: { node: ToolNode }) {
  // Until the user toggles it, a card's openness follows its tool's presentation (it arrives with the tool/call event).
  const [choice, setChoice] = useRemembered<boolean | undefined>(`tool:${node.key}`, undefined)
  const expanded = choice ?? (node.presentation?.unfolded === true || node.status === 'error')
  const title = node.presentation?.title
  const summary = title !== undefined && title !== node.name ? title : ''
  const decision = decisionLabel(node)
  return (
    <article
      className={clsx(styles.card, styles[node.status])}
      data-node="tool"
      data-tool={node.name}
      data-view={node.presentation?.view ?? 'generic'}
      data-status={node.status}
      aria-label={`Tool ${node.name || 'call'}, ${STATUS_LABEL[node.status]}`}
    >
      <button type="button" className={styles.header} aria-expanded={expanded} onClick={() => setChoice(!expanded)}>
        <Chevron open={expanded} />
        <span className={styles.name}>{node.name || 'tool'}</span>
        <span className={styles.summary}>{summary}</span>
        {decision ? <span className={styles.decision}>{decision}</span> : null}
        <span className={clsx(styles.status, styles[`status-${node.status}`])}>
          {node.status === 'running' || node.status === 'streaming' ? (
            <span className={styles.spinner} aria-hidden="true" />
          ) : null}
          {STATUS_LABEL[node.status]}
        </span>
      </button>
      {expanded ? <ToolBody node={node} /> : null}
    </article>
  )
}

function decisionLabel(node: ToolNode): string | undefined {
  const d = node.decision
  if (!d) return undefined
  if (d.decision === 'deny') return 'denied by preset'
  if (d.decision === 'allow') return 'allowed for session'
  if (d.answer === 'allow-once') return 'allowed once'
  if (d.answer === 'allow-session') return 'allowed for session'
  if (d.answer === 'reject') return 'rejected'
  return 'asked'
}
