import { defineConfig } from 'vitest/config'

// `pnpm test:release`: the release tarballs, packed from the built checkout,
// installed and used (apps/cli/release-tests). Kept out of `pnpm test`:
// installing compiles the native modules, which takes minutes; .ci/run runs
// it as a step of its own. Resolves workspace packages as vitest.config.ts does.
export default defineConfig({
  resolve: { conditions: ['dsh-source'] },
  ssr: { resolve: { conditions: ['dsh-source'] } },
  test: {
    include: ['apps/cli/release-tests/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 20 * 60_000,
    pool: 'forks',
  },
})
