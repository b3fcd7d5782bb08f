import type { SessionId } from '@dsh/web-client'

export type Route = { page: 'home'; cwd?: string } | { page: 'session'; sessionId: SessionId } | { page: 'settings' }

/** Hash routes: `#/`, `#/new?cwd=...`, `#/session/<id>`, `#/settings`. */
export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#\/?/, '')
  const [head = '', rest = ''] = path.split('/', 2)
  if (head === 'session' && rest) return { page: 'session', sessionId: decodeURIComponent(rest) as SessionId }
  if (head === 'settings') return { page: 'settings' }
  if (head.startsWith('new')) {
    const cwd = new URLSearchParams(head.slice(head.indexOf('?') + 1)).get('cwd')
    return cwd && head.includes('?') ? { page: 'home', cwd } : { page: 'home' }
  }
  return { page: 'home' }
}

export function hrefOf(route: Route): string {
  switch (route.page) {
    case 'session':
      return `#/session/${encodeURIComponent(route.sessionId)}`
    case 'settings':
      return '#/settings'
    case 'home':
      return route.cwd ? `#/new?cwd=${encodeURIComponent(route.cwd)}` : '#/'
  }
}

export function navigate(route: Route): void {
  const href = hrefOf(route)
  if (location.hash !== href) location.hash = href
}
