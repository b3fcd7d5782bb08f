import { defineConfig } from 'vitest/config'

// Workspace packages export a "dsh-source" condition pointing at src/, so
// tests run against TypeScript sources without a build. (Not "source": some
// published packages export TypeScript under that name, which would then be
// picked over their built files.) End-to-end tests spawn the
// built bin instead (apps/cli/lib/bin.js).
export default defineConfig({
  resolve: { conditions: ['dsh-source'] },
  ssr: { resolve: { conditions: ['dsh-source'] } },
  test: {
    include: [
      'apps/*/tests/**/*.test.ts',
      'packages/*/*/tests/**/*.test.ts',
      'scripts/**/*.test.ts',
      'snapshots/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
})
