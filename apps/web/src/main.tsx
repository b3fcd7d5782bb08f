import { createRoot } from 'react-dom/client'
import './theme/tokens.css'
import './theme/base.css'
import { App } from './components/App.tsx'
import { parseRoute } from './lib/route.ts'
import { takeAccessToken } from './lib/token.ts'
import { AppModel } from './model/app.ts'
import { followSystemTheme } from './theme/theme.ts'

performance.mark('dsh:app-start')
const model = new AppModel(takeAccessToken())
// Tests and benchmarks drive the live socket through this handle (drop it to check the resume).
Object.assign(window, { dsh: model })
const route = parseRoute(location.hash)
if (route.page === 'session') model.prefetch(route.sessionId)
followSystemTheme()
void model.start()
createRoot(document.getElementById('root') as HTMLElement).render(<App model={model} />)
