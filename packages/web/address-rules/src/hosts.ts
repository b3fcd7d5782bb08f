/**
 * Whether `host` is one of `patterns`: a host name, an IP literal (brackets
 * allowed), or `*.domain` for every name below that domain. Case and a
 * trailing dot do not matter. For the exemptions users write (`allowHosts`).
 */
export function hostAllowed(host: string, patterns: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, '')
  return patterns.some((pattern) => {
    const p = pattern
      .trim()
      .toLowerCase()
      .replace(/^\[|\]$/g, '')
      .replace(/\.$/, '')
    if (p.startsWith('*.')) return name.endsWith(p.slice(1))
    return name === p
  })
}
