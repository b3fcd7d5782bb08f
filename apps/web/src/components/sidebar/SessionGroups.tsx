import type { SessionSummary } from '@dsh/web-client'
import { useState } from 'react'
import { baseName } from '../../lib/format.ts'
import { hrefOf } from '../../lib/route.ts'
import { Icon } from '../common/Icon.tsx'
import styles from './SessionGroups.module.css'
import { SessionItem } from './SessionItem.tsx'

const FIRST_SHOWN = 8

/** Sessions grouped by workspace, most recently active group first; search results stay in one flat list. */
export function SessionGroups({
  sessions,
  currentId,
  searching,
}: {
  sessions: readonly SessionSummary[]
  currentId?: string
  searching: boolean
}) {
  if (searching) {
    return (
      <ul className={styles.items} aria-label="Search results">
        {sessions.map((s) => (
          <SessionItem key={s.sessionId} session={s} current={s.sessionId === currentId} showWorkspace />
        ))}
      </ul>
    )
  }
  const groups = new Map<string, SessionSummary[]>()
  for (const session of sessions) {
    const list = groups.get(session.cwd)
    if (list) list.push(session)
    else groups.set(session.cwd, [session])
  }
  return (
    <>
      {[...groups].map(([cwd, list]) => (
        <Group key={cwd} cwd={cwd} sessions={list} currentId={currentId} />
      ))}
    </>
  )
}

function Group({ cwd, sessions, currentId }: { cwd: string; sessions: SessionSummary[]; currentId?: string }) {
  const [all, setAll] = useState(false)
  const [collapsed, setCollapsed] = useState(false)
  const currentIndex = sessions.findIndex((s) => s.sessionId === currentId)
  const shown = all || currentIndex >= FIRST_SHOWN ? sessions : sessions.slice(0, FIRST_SHOWN)
  const headingId = `ws-${cwd.replace(/[^a-zA-Z0-9]/g, '-')}`
  return (
    <section className={styles.group} aria-labelledby={headingId}>
      <div className={styles.heading}>
        <button
          type="button"
          className={styles.toggle}
          aria-expanded={!collapsed}
          onClick={() => setCollapsed(!collapsed)}
          title={cwd}
        >
          <Icon name="folder" size={14} />
          <span id={headingId} className={styles.name}>
            {baseName(cwd)}
          </span>
        </button>
        <a
          className={styles.add}
          href={hrefOf({ page: 'home', cwd })}
          aria-label={`New session in ${baseName(cwd)}`}
          title={`New session in ${cwd}`}
        >
          <Icon name="plus" size={14} />
        </a>
      </div>
      {collapsed ? null : (
        <ul className={styles.items}>
          {shown.map((s) => (
            <SessionItem key={s.sessionId} session={s} current={s.sessionId === currentId} />
          ))}
          {shown.length < sessions.length ? (
            <li>
              <button type="button" className={styles.more} onClick={() => setAll(true)}>
                Show {sessions.length - shown.length} more
              </button>
            </li>
          ) : null}
        </ul>
      )}
    </section>
  )
}
