// No Intl here: the first Intl object a page creates loads ICU data, about 50 ms on the first paint.

export function formatTokens(n: number): string {
  return n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : groupThousands(Math.round(n))
}

function groupThousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+$)/g, ',')
}

export function formatCost(usd: number): string {
  if (usd === 0) return '$0'
  if (usd >= 0.01) return `$${usd.toFixed(2)}`
  // Cheap models cost fractions of a cent per turn: keep the digits that say how much.
  const digits = usd.toFixed(6).replace(/0+$/, '')
  return digits === '0.' ? '<$0.000001' : `$${digits}`
}

/** A share of the context window: one decimal below 10%, whole percents above. */
export function formatPercent(percent: number): string {
  return percent < 10 ? `${percent.toFixed(1)}%` : `${Math.round(percent)}%`
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const minutes = Math.floor(ms / 60_000)
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/** "just now", "5 min ago", "3 h ago", else a date: "Nov 30" this year, "Nov 30, 2024" before. */
export function formatWhen(epochMs: number, now = Date.now()): string {
  const seconds = Math.round((now - epochMs) / 1000)
  if (seconds < 60) return 'just now'
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`
  const date = new Date(epochMs)
  const day = `${MONTHS[date.getMonth()]} ${date.getDate()}`
  return date.getFullYear() === new Date(now).getFullYear() ? day : `${day}, ${date.getFullYear()}`
}

/** The last folder name of a path, for compact workspace labels. */
export function baseName(path: string): string {
  const trimmed = path.replace(/[\\/]+$/, '')
  return trimmed.slice(Math.max(trimmed.lastIndexOf('/'), trimmed.lastIndexOf('\\')) + 1) || trimmed || path
}
