import type { Theme } from '@dsh/web-client'

const KEY = 'dsh.theme'
const dark = () => matchMedia('(prefers-color-scheme: dark)')

export function storedTheme(): Theme {
  const value = localStorage.getItem(KEY)
  return value === 'light' || value === 'dark' ? value : 'system'
}

/** Applies a theme preference to the page and keeps it for the next first paint (see index.html). */
export function applyTheme(preference: Theme): void {
  localStorage.setItem(KEY, preference)
  const resolved = preference === 'system' ? (dark().matches ? 'dark' : 'light') : preference
  document.documentElement.dataset.theme = resolved
}

/** Follows the system's light/dark changes while the preference is `system`. */
export function followSystemTheme(): () => void {
  const query = dark()
  const onChange = () => {
    if (storedTheme() === 'system') applyTheme('system')
  }
  query.addEventListener('change', onChange)
  return () => query.removeEventListener('change', onChange)
}
