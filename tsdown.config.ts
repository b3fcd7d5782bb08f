import { defineConfig } from 'tsdown'

// One build for the whole workspace: every top-level file in a package's
// src/ is an entry, emitted to lib/. Dependencies listed in a package's
// package.json stay external (workspace packages and native modules included).
export default defineConfig({
  workspace: { include: ['packages/*/*', 'apps/cli'] },
  entry: ['src/*.ts'],
  outDir: 'lib',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  dts: false,
  clean: true,
  report: false,
  logLevel: 'warn',
})
