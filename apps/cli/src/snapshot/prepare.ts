export function prepare(importers: Record<string, () => Promise<unknown>>): void {
  ;(globalThis as { __importers?: typeof importers }).__importers = importers
}
