const KEY = 'dsh.token'

/**
 * The access token of a server bound beyond loopback arrives once in the URL
 * fragment (`#token=...`). Keep it for this tab and take it out of the URL.
 */
export function takeAccessToken(): string | undefined {
  const match = location.hash.match(/(?:^#|&)token=([^&]+)/)
  if (match?.[1]) {
    const token = decodeURIComponent(match[1])
    sessionStorage.setItem(KEY, token)
    history.replaceState(null, '', `${location.pathname}${location.search}#/`)
    return token
  }
  return sessionStorage.getItem(KEY) ?? undefined
}
