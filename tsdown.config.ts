import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { defineConfig, type UserConfig } from 'tsdown'

// One build for the whole workspace. Each package's entries are the files its
// package.json names: the "dsh-source" condition of every export, and bin files
// (lib/x.js <- src/x.ts). Dependencies listed in a package's package.json stay
// external, so workspace packages and native modules are never inlined.
// apps/cli's bin, lib/dsh, is the launcher written with the startup snapshot
// once apps/cli is built (scripts/snapshot/build.mjs); lib/bin.js is its
// plain entry.
interface Manifest {
  name: string
  exports?: Record<string, { 'dsh-source'?: string }>
  bin?: Record<string, string>
}

const dirs = ['packages', 'apps'].flatMap((top) =>
  readdirSync(top, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) =>
      top === 'apps'
        ? [path.join(top, d.name)]
        : readdirSync(path.join(top, d.name)).map((p) => path.join(top, d.name, p)),
    ),
)

function entriesOf(dir: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest
  const fromExports = Object.values(manifest.exports ?? {}).flatMap((e) => (e['dsh-source'] ? [e['dsh-source']] : []))
  const fromBin = Object.values(manifest.bin ?? {})
    .filter((file) => file.endsWith('.js'))
    .map((file) => file.replace(/^\.\/lib\//, './src/').replace(/\.js$/, '.ts'))
  return [...new Set([...fromExports, ...fromBin, ...(extraEntries[dir] ?? [])])].filter((entry) =>
    existsSync(path.join(dir, entry)),
  )
}

// Inlined for start-up time: yaml ships ~100 small ES modules, and loading
// them one by one costs more than the launcher's whole dump path.
const inline: Record<string, string[]> = { 'packages/boot/loader': ['yaml'] }

const extraEntries: Record<string, string[]> = {
  [path.join('apps', 'cli')]: ['./src/bin.ts', './src/build-snapshot.ts'],
}

/** Builds the startup snapshot and the launcher; a failure there warns and leaves the plain entry (it never fails the build). */
const buildSnapshot = (): Promise<void> =>
  new Promise((resolve) => {
    spawn(process.execPath, [path.resolve('scripts/snapshot/build.mjs')], { stdio: 'inherit' }).on('close', () =>
      resolve(),
    )
  })

const configs: UserConfig[] = dirs
  .filter(
    (dir) =>
      existsSync(path.join(dir, 'package.json')) &&
      existsSync(path.join(dir, 'src')) &&
      dir !== path.join('apps', 'web'),
  )
  .filter((dir) => entriesOf(dir).length > 0)
  .map((dir) => ({
    name: dir,
    cwd: path.resolve(dir),
    entry: entriesOf(dir),
    outDir: 'lib',
    format: 'esm',
    fixedExtension: false,
    platform: 'node',
    target: 'node20',
    dts: false,
    clean: false,
    report: false,
    logLevel: 'warn',
    deps: { alwaysBundle: inline[dir] ?? [] },
    hooks: dir === path.join('apps', 'cli') ? { 'build:done': buildSnapshot } : undefined,
  }))

export default defineConfig(configs)
