import { clsx } from 'clsx'
import { useApp } from '../../hooks/app-context.ts'
import { baseName, formatCost, formatPercent, formatTokens } from '../../lib/format.ts'
import { useStore } from '../../lib/store.ts'
import type { SessionView } from '../../model/session-controller.ts'
import { SidebarToggle } from '../common/SidebarToggle.tsx'
import styles from './SessionHeader.module.css'

/** Title, workspace, model and running totals of the open session; the socket's state when it is not connected. */
export function SessionHeader({ view }: { view: SessionView }) {
  const app = useApp()
  const connection = useStore(app.connection)
  const { conversation, meta } = view
  const title = conversation.title ?? meta?.title ?? 'Untitled session'
  const model = conversation.model ?? meta?.model
  const usage = conversation.totalUsage
  const tokens = usage.inputTokens + (usage.cacheReadTokens ?? 0) + usage.outputTokens
  return (
    <header className={styles.header}>
      <SidebarToggle />
      <div className={styles.titles}>
        <h1 className={styles.title}>{title}</h1>
        {meta ? (
          <p className={styles.cwd} title={meta.cwd}>
            {baseName(meta.cwd)}
            {meta.parentSession ? (
              <>
                {' · '}
                <a href={`#/session/${encodeURIComponent(meta.parentSession)}`}>parent session</a>
              </>
            ) : null}
          </p>
        ) : null}
      </div>
      <div className={styles.chips}>
        {connection !== 'open' ? (
          <span className={clsx(styles.chip, styles.offline)} role="status">
            {connection === 'reconnecting' ? 'Reconnecting…' : 'Connecting…'}
          </span>
        ) : null}
        {conversation.running ? (
          <span className={clsx(styles.chip, styles.running)} role="status">
            <span className={styles.dot} aria-hidden="true" /> Working
          </span>
        ) : null}
        {conversation.planMode ? <span className={styles.chip}>Plan mode</span> : null}
        {model ? (
          <span className={styles.chip} title="Model (change with /model <id>)">
            {model}
            {conversation.reasoningEffort ? ` · ${conversation.reasoningEffort}` : ''}
          </span>
        ) : null}
        {meta?.permissionPreset ? (
          <span className={styles.chip} title="Permission preset">
            {meta.permissionPreset}
          </span>
        ) : null}
        {meta?.network && meta.permissionPreset !== 'danger-full-access' ? (
          <span className={styles.chip} title="Network of sandboxed commands">
            network {meta.network}
          </span>
        ) : null}
        {tokens > 0 ? (
          <span className={styles.chip} title="Tokens and cost of this session">
            {formatTokens(tokens)} tokens
            {conversation.totalCost !== undefined ? ` · ${formatCost(conversation.totalCost)}` : ''}
          </span>
        ) : null}
        {conversation.context ? (
          <span
            className={styles.chip}
            title={`Context window: ${formatTokens(conversation.context.tokens)} of ${formatTokens(conversation.context.window)} tokens`}
          >
            {formatPercent(conversation.context.percent)} context
          </span>
        ) : null}
      </div>
    </header>
  )
}
