import { lazy, Suspense } from 'react'
import { AppContext } from '../hooks/app-context.ts'
import { useRoute } from '../hooks/useRoute.ts'
import type { AppModel } from '../model/app.ts'
import styles from './App.module.css'
import { ToastArea } from './common/ToastArea.tsx'
import { HomePage } from './pages/HomePage.tsx'
import { SessionPage } from './pages/SessionPage.tsx'
import { Sidebar } from './sidebar/Sidebar.tsx'

// Off the first paint: loaded when first shown.
const SettingsPage = lazy(() => import('./pages/SettingsPage.tsx').then((m) => ({ default: m.SettingsPage })))

export function App({ model }: { model: AppModel }) {
  return (
    <AppContext.Provider value={model}>
      <Layout />
    </AppContext.Provider>
  )
}

function Layout() {
  const route = useRoute()
  return (
    <div className={styles.layout}>
      <button type="button" className={styles.skip} onClick={() => document.getElementById('main')?.focus()}>
        Skip to the main content
      </button>
      <Sidebar />
      <main id="main" className={styles.main} tabIndex={-1}>
        {route.page === 'session' ? (
          <SessionPage key={route.sessionId} sessionId={route.sessionId} />
        ) : route.page === 'settings' ? (
          <Suspense fallback={null}>
            <SettingsPage />
          </Suspense>
        ) : (
          <HomePage key={route.cwd ?? ''} {...(route.cwd ? { cwd: route.cwd } : {})} />
        )}
      </main>
      <ToastArea />
    </div>
  )
}
