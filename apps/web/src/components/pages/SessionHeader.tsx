import type { SessionPatch } from '@dsh/web-client'
import { clsx } from 'clsx'
import { useApp } from '../../hooks/app-context.ts'
import { download, sessionJsonl, sessionMarkdown } from '../../lib/export.ts'
import { baseName, formatCost, formatPercent, formatTokens } from '../../lib/format.ts'
import { useStore } from '../../lib/store.ts'
import type { SessionController, SessionView } from '../../model/session-controller.ts'
import { Icon } from '../common/Icon.tsx'
import { SidebarToggle } from '../common/SidebarToggle.tsx'
import { ActivityPopover } from './ActivityPopover.tsx'
import styles from './SessionHeader.module.css'
import { SettingChip } from './SettingChip.tsx'

/** The downloads the header offers: the readable conversation and the raw log. */
const EXPORTS = [
  {
    format: 'md',
    label: 'Markdown',
    title: 'Download the conversation as Markdown',
    mediaType: 'text/markdown',
    render: sessionMarkdown,
  },
  {
    format: 'jsonl',
    label: 'JSONL',
    title: 'Download the session log as JSON lines',
    mediaType: 'application/x-ndjson',
    render: sessionJsonl,
  },
] as const

/**
 * Title, workspace, settings and running totals of the open session; the
 * socket's state when it is not connected. The model, reasoning effort,
 * permission preset, network and plan mode are controls that change the
 * session's own setting.
 */
export function SessionHeader({ view, controller }: { view: SessionView; controller: SessionController }) {
  const app = useApp()
  const connection = useStore(app.connection)
  const info = useStore(app.info)
  const settings = useStore(app.settings)
  const { conversation, meta } = view
  const title = conversation.title ?? meta?.title ?? 'Untitled session'
  const model = meta?.model ?? conversation.model
  const effort = meta?.reasoningEffort ?? conversation.reasoningEffort
  const exportAs = async ({ format, mediaType, render }: (typeof EXPORTS)[number]) => {
    try {
      const { session, events } = await app.api.getSession(controller.id)
      const exported = { sessionId: session.sessionId, cwd: session.cwd, events, ...(title ? { title } : {}) }
      download(`dsh-session-${session.sessionId}.${format}`, render(exported), mediaType)
    } catch (error) {
      app.toasts.error(error, 'Exporting the session')
    }
  }
  const configure = (change: SessionPatch, what: string) =>
    void controller.configure(change).catch((error: unknown) => app.toasts.error(error, `Changing the ${what}`))
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
        <button
          type="button"
          className={clsx(styles.chip, styles.control, conversation.planMode && styles.on)}
          aria-pressed={conversation.planMode}
          title="Plan mode: the agent reads and plans, and changes no files (also /plan)"
          onClick={() => configure({ planMode: !conversation.planMode }, 'plan mode')}
        >
          Plan mode
        </button>
        {model ? (
          <SettingChip
            label="Model"
            value={model}
            options={info?.models ?? []}
            onChange={(value) => configure({ model: value }, 'model')}
          />
        ) : null}
        {model ? (
          <SettingChip
            label="Reasoning effort"
            value={effort ?? 'default'}
            options={info?.reasoningEfforts ?? []}
            format={(option) => `effort ${option}`}
            onChange={(value) => configure({ reasoningEffort: value }, 'reasoning effort')}
          />
        ) : null}
        {meta?.permissionPreset ? (
          <SettingChip
            label="Permission preset"
            value={meta.permissionPreset}
            options={info?.presets ?? []}
            onChange={(value) => configure({ permissionPreset: value }, 'permission preset')}
          />
        ) : null}
        {meta?.network && meta.permissionPreset !== 'danger-full-access' ? (
          <SettingChip
            label="Network of sandboxed commands"
            value={meta.network}
            options={settings?.networks ?? []}
            format={(option) => `network ${option}`}
            onChange={(value) => configure({ network: value }, 'network')}
          />
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
        <ActivityPopover sessionId={controller.id} running={conversation.running} />
        {EXPORTS.map((entry) => (
          <button
            key={entry.format}
            type="button"
            className={clsx(styles.chip, styles.control)}
            title={entry.title}
            aria-label={`Export as ${entry.label}`}
            onClick={() => void exportAs(entry)}
          >
            <Icon name="download" size={12} /> {entry.label}
          </button>
        ))}
      </div>
    </header>
  )
}
