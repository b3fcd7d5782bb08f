import { clsx } from 'clsx'
import { useEffect, useRef } from 'react'
import { useApp } from '../../hooks/app-context.ts'
import { useRoute } from '../../hooks/useRoute.ts'
import { hrefOf } from '../../lib/route.ts'
import { useStore } from '../../lib/store.ts'
import { Icon } from '../common/Icon.tsx'
import { Kbd } from '../common/Kbd.tsx'
import { SessionGroups } from './SessionGroups.tsx'
import styles from './Sidebar.module.css'

/** Brand, new session, search, the sessions grouped by workspace, and settings. Ctrl+K focuses the search. */
export function Sidebar() {
  const app = useApp()
  const route = useRoute()
  const list = useStore(app.sessions)
  const open = useStore(app.sidebarOpen)
  const search = useRef<HTMLInputElement>(null)
  const currentId = route.page === 'session' ? route.sessionId : undefined
  const currentCwd = list.sessions.find((s) => s.sessionId === currentId)?.cwd ?? list.sessions[0]?.cwd

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 'k') {
        event.preventDefault()
        app.sidebarOpen.set(true)
        search.current?.focus()
      }
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [app])

  // Going to another page closes the sidebar (it covers the page on narrow screens).
  useEffect(() => {
    const close = () => app.sidebarOpen.set(false)
    window.addEventListener('hashchange', close)
    return () => window.removeEventListener('hashchange', close)
  }, [app])

  return (
    <>
      {open ? <div className={styles.scrim} onClick={() => app.sidebarOpen.set(false)} aria-hidden="true" /> : null}
      <nav className={clsx(styles.sidebar, open && styles.open)} aria-label="Sessions">
        <div className={styles.top}>
          <a className={styles.brand} href="#/">
            dsh
          </a>
          <a className={styles.newButton} href={hrefOf({ page: 'home', ...(currentCwd ? { cwd: currentCwd } : {}) })}>
            <Icon name="plus" /> New session
          </a>
        </div>
        <div className={styles.search}>
          <Icon name="search" size={14} />
          <input
            ref={search}
            type="search"
            className={styles.searchInput}
            placeholder="Search sessions"
            aria-label="Search sessions"
            value={list.query}
            onChange={(e) => app.sessions.search(e.target.value)}
          />
          <Kbd>Ctrl+K</Kbd>
        </div>
        <div className={styles.list}>
          {list.error ? (
            <p role="alert" className={styles.empty}>
              {list.error}
            </p>
          ) : list.sessions.length === 0 && !list.loading ? (
            <p className={styles.empty}>{list.query ? 'No session matches.' : 'No sessions yet.'}</p>
          ) : (
            <SessionGroups sessions={list.sessions} currentId={currentId} searching={list.query.trim() !== ''} />
          )}
        </div>
        <a
          className={clsx(styles.settings, route.page === 'settings' && styles.current)}
          href="#/settings"
          aria-current={route.page === 'settings' ? 'page' : undefined}
        >
          <Icon name="settings" /> Settings
        </a>
      </nav>
    </>
  )
}
