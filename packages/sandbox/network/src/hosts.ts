/**
 * One allowlist entry: `example.com` (that name only) or `*.example.com`
 * (any name below it, not the name itself). Names are compared lowercased,
 * without a trailing dot.
 */
export interface HostPattern {
  name: string
  subdomains: boolean
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

/** The pattern an allowlist entry stands for, or why it is not one. */
export function parseHostPattern(entry: string): HostPattern | { error: string } {
  if (typeof entry !== 'string') return { error: `${JSON.stringify(entry)} is not a string` }
  const text = entry.trim().toLowerCase().replace(/\.$/, '')
  const subdomains = text.startsWith('*.')
  const name = subdomains ? text.slice(2) : text
  const labels = name.split('.')
  // Labels of letters, digits and hyphens, at least two, the last not all digits: no IPv4 or IPv6 literal passes.
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label)) || /^\d+$/.test(labels.at(-1) ?? '')) {
    return { error: `${JSON.stringify(entry)} is not a domain name or a *.domain pattern` }
  }
  return { name, subdomains }
}

/** Parses every entry; the first bad one throws, naming the field and the entry's position. */
export function parseHostPatterns(entries: readonly string[], field: string): HostPattern[] {
  return entries.map((entry, index) => {
    const parsed = parseHostPattern(entry)
    if ('error' in parsed) throw new Error(`${field}[${index}]: ${parsed.error}`)
    return parsed
  })
}

export function matchesHost(host: string, patterns: readonly HostPattern[]): boolean {
  const name = normalizeHost(host)
  return patterns.some((pattern) => (pattern.subdomains ? name.endsWith(`.${pattern.name}`) : name === pattern.name))
}

/** Lowercase, no trailing dot, no IPv6 brackets. */
export function normalizeHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[(.*)\]$/, '$1')
}

/** Package registries and code hosts a build commonly needs. */
export const DEFAULT_ALLOWED_HOSTS = [
  'registry.npmjs.org',
  'registry.yarnpkg.com',
  'pypi.org',
  'files.pythonhosted.org',
  'crates.io',
  'index.crates.io',
  'static.crates.io',
  'proxy.golang.org',
  'sum.golang.org',
  'deb.debian.org',
  'security.debian.org',
  'archive.ubuntu.com',
  'security.ubuntu.com',
  'ports.ubuntu.com',
  'github.com',
  'api.github.com',
  'codeload.github.com',
  '*.githubusercontent.com',
] as const
