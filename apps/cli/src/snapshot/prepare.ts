export function prepare(importers: Record<string, () => Promise<unknown>>): void {
  ;(globalThis as any).__importers = importers
}
