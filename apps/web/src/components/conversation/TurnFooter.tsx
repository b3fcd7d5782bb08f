import { formatCost, formatDuration, formatTokens } from '../../lib/format.ts'
import type { TurnEndNode } from '../../model/nodes.ts'
import styles from './TurnFooter.module.css'

const ENDINGS: Record<string, string | undefined> = {
  aborted: 'Stopped',
  error: 'Failed',
  'max-tokens': 'Cut off at the output token limit',
  interrupted: 'Interrupted (dsh stopped during this turn)',
}

const KEY_PROBLEMS = new Set(['AUTH', 'INVALID_CREDENTIAL', 'MISSING_CREDENTIAL'])

/** The end of a turn: how it ended, tokens and cost, duration; the provider's error code when it failed. */
export function TurnFooter({ node }: { node: TurnEndNode }) {
  const { usage } = node
  const prompt = usage.inputTokens + (usage.cacheReadTokens ?? 0)
  const cached = prompt > 0 ? Math.round(((usage.cacheReadTokens ?? 0) / prompt) * 100) : 0
  const ending = ENDINGS[node.reason]
  return (
    <div className={styles.footer} data-node="turn-end" data-reason={node.reason}>
      {node.error ? (
        <div role="alert" className={styles.error}>
          <span className={styles.code}>{node.error.code}</span>
          {node.error.status ? <span className={styles.status}>HTTP {node.error.status}</span> : null}
          <span>{node.error.message}</span>
          {KEY_PROBLEMS.has(node.error.code) ? <a href="#/settings">Check the key in Settings</a> : null}
        </div>
      ) : null}
      <div className={styles.stats}>
        {ending ? <span className={styles.ending}>{ending}</span> : null}
        {prompt + usage.outputTokens > 0 ? (
          <span
            title={`${usage.inputTokens} uncached input, ${usage.cacheReadTokens ?? 0} cached input, ${usage.outputTokens} output (${usage.reasoningTokens ?? 0} reasoning)`}
          >
            {formatTokens(prompt)} in{cached > 0 ? ` (${cached}% cached)` : ''} · {formatTokens(usage.outputTokens)} out
          </span>
        ) : null}
        {node.cost !== undefined ? <span>{formatCost(node.cost)}</span> : null}
        {node.durationMs !== undefined ? <span>{formatDuration(node.durationMs)}</span> : null}
      </div>
    </div>
  )
}
