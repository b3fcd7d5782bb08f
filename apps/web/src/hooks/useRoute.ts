import { useSyncExternalStore } from 'react'
import { parseRoute, type Route } from '../lib/route.ts'

let current: { hash: string; route: Route } | undefined

function snapshot(): Route {
  if (current?.hash !== location.hash) current = { hash: location.hash, route: parseRoute(location.hash) }
  return current.route
}

function subscribe(listener: () => void): () => void {
  window.addEventListener('hashchange', listener)
  return () => window.removeEventListener('hashchange', listener)
}

export function useRoute(): Route {
  return useSyncExternalStore(subscribe, snapshot)
}
