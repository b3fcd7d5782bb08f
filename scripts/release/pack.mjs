#!/usr/bin/env node
// `pnpm release:pack`: writes the publishable tarballs to dist/release/ from a
// built checkout (`pnpm build` first; the pnpm script does it):
//
// - the CLI (`@dsh/cli`, bin `dsh` = lib/bin.js), with every in-box @dsh
//   package and the built web app inside it;
// - the SDK client (`@dsh/sdk-client`) with type declarations;
// - the plugin-author package (`@dsh/plugin-kit`) with type declarations.
//
// Each tarball holds the workspace packages it needs as bundled dependencies
// (`bundleDependencies`, copied into its node_modules/ with their built lib/),
// laid out as in the checkout, so the loader finds bundles and plugins by
// package name exactly as it does there. Their third-party dependencies
// (cordis, zod, the native modules better-sqlite3, node-pty, zstd-napi,
// @vscode/ripgrep...) are declared on the tarball's own package.json, so npm
// installs them next to the bundled packages. The bin is the Node entry
// lib/bin.js. A startup snapshot blob cannot ship (it holds absolute paths and
// loads only in the node binary that made it): the tarball holds the bundle it
// is made from, laid out for the package (scripts/snapshot/build.mjs
// --installed), and the first run that would use it builds the blob into
// $DSH_HOME/cache/snapshot/ in the background (apps/cli/src/snapshot/cache.ts).
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))
const outDir = path.join(root, 'dist/release')
const stageRoot = path.join(outDir, 'stage')
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'))
const log = (text) => console.error(`release: ${text}`)

/** Every workspace package by name: its folder and manifest. */
function workspacePackages() {
  const found = new Map()
  const folders = [
    ...readdirSync(path.join(root, 'apps')).map((name) => path.join(root, 'apps', name)),
    ...readdirSync(path.join(root, 'packages')).flatMap((group) =>
      readdirSync(path.join(root, 'packages', group)).map((name) => path.join(root, 'packages', group, name)),
    ),
  ]
  for (const dir of folders) {
    const file = path.join(dir, 'package.json')
    if (!existsSync(file)) continue
    const manifest = readJson(file)
    found.set(manifest.name, { dir, manifest })
  }
  return found
}

const isWorkspace = (spec) => spec.startsWith('workspace:')

/** The workspace packages `names` need, themselves included, through their dependencies. */
function closure(workspace, names) {
  const seen = new Set()
  const visit = (name) => {
    if (seen.has(name)) return
    const pkg = workspace.get(name)
    if (!pkg) throw new Error(`${name} is not a workspace package`)
    seen.add(name)
    for (const [dep, spec] of Object.entries(pkg.manifest.dependencies ?? {})) if (isWorkspace(spec)) visit(dep)
  }
  for (const name of names) visit(name)
  return [...seen].sort()
}

/** The third-party dependencies of `names`, one version each (two packages wanting different ones is an error). */
function thirdParty(workspace, names) {
  const wanted = new Map()
  for (const name of names) {
    for (const [dep, spec] of Object.entries(workspace.get(name).manifest.dependencies ?? {})) {
      if (isWorkspace(spec)) continue
      const other = wanted.get(dep)
      if (other && other.spec !== spec)
        throw new Error(`${dep}: ${other.by} wants ${other.spec} but ${name} wants ${spec}; make them agree`)
      wanted.set(dep, { spec, by: name })
    }
  }
  return Object.fromEntries([...wanted].sort(([a], [b]) => a.localeCompare(b)).map(([dep, { spec }]) => [dep, spec]))
}

/**
 * Type declarations of the given workspace packages, emitted by tsc from
 * their sources into `<out>/<package folder>/src/**.d.ts`, with the `.ts`
 * extension of relative imports turned into `.js`.
 */
function emitDeclarations(workspace, names, out) {
  const entries = names.flatMap((name) => {
    const { dir, manifest } = workspace.get(name)
    return Object.values(manifest.exports ?? {})
      .map((target) => (typeof target === 'string' ? undefined : target['dsh-source']))
      .filter((entry) => entry !== undefined)
      .map((entry) => path.join(dir, entry))
  })
  const config = path.join(out, 'tsconfig.json')
  mkdirSync(out, { recursive: true })
  writeFileSync(
    config,
    JSON.stringify({
      extends: path.join(root, 'tsconfig.base.json'),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        outDir: out,
        rootDir: root,
        lib: ['ES2023'],
        types: ['node'],
        typeRoots: [path.join(root, 'node_modules/@types')],
      },
      files: entries,
    }),
  )
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', config], {
    stdio: 'inherit',
  })
  const rewrite = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name)
      if (entry.isDirectory()) rewrite(file)
      else if (entry.name.endsWith('.d.ts'))
        writeFileSync(
          file,
          readFileSync(file, 'utf8').replace(/(from\s+|import\(\s*)(['"])(\.{1,2}\/[^'"]+)\.ts\2/g, '$1$2$3.js$2'),
        )
    }
  }
  rewrite(out)
}

/**
 * Copies a workspace package as a bundled dependency: its manifest (no
 * workspace or third-party dependencies: those are the tarball's; no source
 * condition), README, the files it lists, and its declarations when emitted.
 */
function stageBundled(workspace, name, nodeModules, types, version) {
  const { dir, manifest } = workspace.get(name)
  const target = path.join(nodeModules, name)
  mkdirSync(target, { recursive: true })
  for (const file of [...(manifest.files ?? []), 'README.md']) {
    if (existsSync(path.join(dir, file))) cpSync(path.join(dir, file), path.join(target, file), { recursive: true })
  }
  const typesDir = types && path.join(types, path.relative(root, dir), 'src')
  const hasTypes = typesDir && existsSync(typesDir)
  if (hasTypes) cpSync(typesDir, path.join(target, 'types'), { recursive: true })
  const exports = Object.fromEntries(
    Object.entries(manifest.exports ?? {}).map(([key, value]) => {
      if (typeof value === 'string') return [key, value]
      const declaration = value['dsh-source']?.replace(/^\.\/src\//, './types/').replace(/\.ts$/, '.d.ts')
      return [
        key,
        hasTypes && declaration && existsSync(path.join(target, declaration))
          ? { types: declaration, default: value.default }
          : { default: value.default },
      ]
    }),
  )
  const { private: _private, devDependencies: _dev, dependencies: _deps, scripts: _scripts, ...kept } = manifest
  const files = hasTypes ? [...(manifest.files ?? []), 'types'] : manifest.files
  writeJson(path.join(target, 'package.json'), { ...kept, version, exports, ...(files ? { files } : {}) })
}

function writeJson(file, value) {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)
}

/**
 * Stages one tarball: `top` is the workspace package it is made from, `extra`
 * writes its own files and returns manifest fields. Packs it into dist/release.
 */
function pack(workspace, { top, name, description, bundledNames, types, extra }) {
  const stage = path.join(stageRoot, name.replace('/', '__'))
  rmSync(stage, { recursive: true, force: true })
  mkdirSync(stage, { recursive: true })
  const version = workspace.get(top).manifest.version
  const nodeModules = path.join(stage, 'node_modules')
  for (const bundled of bundledNames) stageBundled(workspace, bundled, nodeModules, types, version)
  cpSync(path.join(root, 'CHANGELOG.md'), path.join(stage, 'CHANGELOG.md'))
  const own = extra(stage)
  const manifest = {
    name,
    version,
    description,
    type: 'module',
    engines: { node: '>=20.19' },
    ...own,
    dependencies: {
      ...thirdParty(workspace, [top, ...bundledNames]),
      ...Object.fromEntries(bundledNames.map((bundled) => [bundled, version])),
    },
    bundleDependencies: bundledNames,
  }
  writeJson(path.join(stage, 'package.json'), manifest)
  const output = execFileSync('npm', ['pack', '--json', '--pack-destination', outDir], {
    cwd: stage,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const [{ filename, size, unpackedSize }] = JSON.parse(output)
  log(`${path.relative(root, path.join(outDir, filename))} (${kib(size)} KiB, ${kib(unpackedSize)} KiB unpacked)`)
  return path.join(outDir, filename)
}

const kib = (bytes) => (bytes / 1024).toFixed(0)

/**
 * The CLI: lib/ of apps/cli without the checkout's snapshot and shell
 * launcher, the snapshot bundle for the package's layout, and the web app
 * where the server looks.
 */
function cliFiles(stage, cliDir) {
  const lib = path.join(cliDir, 'lib')
  if (!existsSync(path.join(lib, 'bin.js'))) throw new Error(`${lib}/bin.js is missing: run pnpm build first`)
  cpSync(lib, path.join(stage, 'lib'), {
    recursive: true,
    filter: (source) => !/[/\\]lib[/\\](snapshot|dsh)$/.test(source),
  })
  execFileSync(
    process.execPath,
    [path.join(root, 'scripts/snapshot/build.mjs'), '--installed', path.join(stage, 'lib/snapshot/installed.cjs')],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  )
  // @dsh/web-server serves apps/web/dist of the installation root (four folders above its lib/ file).
  const web = path.join(root, 'apps/web/dist')
  if (!existsSync(path.join(web, 'index.html'))) throw new Error(`${web}/index.html is missing: run pnpm build first`)
  cpSync(web, path.join(stage, 'apps/web/dist'), { recursive: true })
  cpSync(path.join(root, 'README.md'), path.join(stage, 'README.md'))
}

export function packRelease() {
  const workspace = workspacePackages()
  rmSync(outDir, { recursive: true, force: true })
  mkdirSync(outDir, { recursive: true })
  const cli = workspace.get('@dsh/cli')
  const inBox = closure(
    workspace,
    Object.entries(cli.manifest.dependencies).flatMap(([name, spec]) => (isWorkspace(spec) ? [name] : [])),
  )
  const clientNames = closure(workspace, ['@dsh/sdk-client'])
  const kitNames = closure(workspace, ['@dsh/plugin-kit'])
  const types = path.join(stageRoot, 'types')
  log(`type declarations of ${[...new Set([...clientNames, ...kitNames])].length} packages`)
  emitDeclarations(workspace, [...new Set([...clientNames, ...kitNames])], types)

  const tarballs = []
  tarballs.push(
    pack(workspace, {
      top: '@dsh/cli',
      name: '@dsh/cli',
      description: cli.manifest.description,
      bundledNames: inBox,
      types: undefined,
      extra: (stage) => {
        cliFiles(stage, cli.dir)
        return { bin: { dsh: 'lib/bin.js' }, files: ['lib', 'apps/web/dist', 'CHANGELOG.md'] }
      },
    }),
  )
  // The client and the kit re-export their own workspace package: a thin entry over the bundled one.
  for (const [top, description] of [
    ['@dsh/sdk-client', 'TypeScript client of the dsh SDK protocol: starts `dsh --profile sdk` and drives it'],
    ['@dsh/plugin-kit', workspace.get('@dsh/plugin-kit').manifest.description],
  ]) {
    const bundledNames = closure(workspace, [top])
    tarballs.push(
      pack(workspace, {
        top,
        name: `${top}`,
        description,
        bundledNames: bundledNames.filter((name) => name !== top),
        types,
        extra: (stage) => {
          // The package itself: its lib/ and declarations at the top, its dependencies bundled.
          const { dir } = workspace.get(top)
          cpSync(path.join(dir, 'lib'), path.join(stage, 'lib'), { recursive: true })
          cpSync(path.join(types, path.relative(root, dir), 'src'), path.join(stage, 'types'), { recursive: true })
          cpSync(path.join(dir, 'README.md'), path.join(stage, 'README.md'))
          return {
            exports: { '.': { types: './types/index.d.ts', default: './lib/index.js' } },
            types: './types/index.d.ts',
            files: ['lib', 'types', 'CHANGELOG.md'],
          }
        },
      }),
    )
  }
  if (!process.env.DSH_RELEASE_KEEP_STAGE) rmSync(stageRoot, { recursive: true, force: true })
  return tarballs
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const file of packRelease()) console.log(file)
}
