import { defineConfig } from 'vitest/config'

// Workspace packages export a "source" condition pointing at src/, so tests
// run against TypeScript sources without a build. End-to-end tests spawn the
// built bin instead (apps/cli/lib/bin.js).
export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['apps/*/tests/**/*.test.ts', 'packages/*/*/tests/**/*.test.ts', 'scripts/**/*.test.ts', 'snapshots/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
})
