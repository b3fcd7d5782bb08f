#!/usr/bin/env node
// Builds the startup snapshot of the `dsh` bin and its launcher (run by the
// tsdown build after apps/cli; see "Startup snapshot" in docs/architecture.md):
//
// 1. bundles apps/cli/src/snapshot/main.ts with every in-box module (the
//    exports of apps/cli's @dsh dependencies, plus cordis, schemastery and
//    zod) from their TypeScript sources into one CommonJS script, keeping
//    native packages, and code the start of a task does not run, outside;
// 2. runs `node --build-snapshot` on it, which evaluates those modules, runs
//    the warm-up (warm-up.mjs: the code every start runs gets compiled) and
//    serializes the heap into apps/cli/lib/snapshot/dsh.blob. A module whose
//    load needs what a snapshot cannot hold (a socket module, a native addon)
//    is deferred: it is still in the bundle, evaluated at run time;
// 3. writes apps/cli/lib/dsh, the shell launcher: node with the blob when the
//    blob fits this node binary, else the plain entry lib/bin.js.
//
// A failure leaves no blob, so dsh starts the plain way; it warns and does
// not fail the build.
import { spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))
const cliDir = path.join(root, 'apps/cli')
const outDir = path.join(cliDir, 'lib/snapshot')
const bundleFile = path.join(outDir, 'dsh.cjs')
const blobFile = path.join(outDir, 'dsh.blob')
const launcherFile = path.join(cliDir, 'lib/dsh')
/** Holds the modification time of the node binary that built the blob (see `writeLauncher`). */
const stampFile = path.join(outDir, 'node.stamp')
const importHelper = 'apps/cli/lib/snapshot/import.cjs'

/** Packages shared with out-of-tree plugins besides the in-box ones (what plugins import). */
const SHARED = ['cordis', 'schemastery', 'zod']
/** Packages that find files next to themselves, so they stay outside the bundle like native ones. */
const LOCATES_OWN_FILES = new Set(['@vscode/ripgrep'])
/**
 * Code the start of a task does not run stays outside too, loaded from the
 * installation on first use: every byte in the snapshot is paid at each
 * start (about 40 ms per MB of blob on the 2-core machines). Whole packages, bare
 * specifiers (undici's index, not the dispatcher files the DeepSeek adapter
 * loads), and files reached by relative imports (zod's locales).
 */
const LAZY_PACKAGES = new Set([
  '@modelcontextprotocol/sdk',
  '@agentclientprotocol/sdk',
  'ws',
  'turndown',
  'import-meta-resolve',
  '@mariozechner/pi-ai',
  // Used only once a language server starts, a page is fetched, an edit shows its diff.
  'vscode-jsonrpc',
  'entities',
  'diff',
])
const LAZY_SPECIFIERS = new Set(['undici'])
const LAZY_FILES = [/\/zod\/v4\/locales\/index\.js$/]
/** Built-in modules that cannot be loaded while a snapshot is built (Node 20). */
const UNSAFE_BUILTINS = [
  'http',
  'https',
  'http2',
  'tls',
  '_http_client',
  '_http_common',
  '_http_outgoing',
  '_http_server',
  'repl',
]
/** Modules known to make at load time what a snapshot cannot hold; evaluated at run time. */
const DEFER = []
const KEEP_NAMES_HELPER = 'var __name = (target, value) => __defProp(target, "name", { value, configurable: true });'
const ENTRY = '\0dsh-snapshot-entry'
const DEFER_MARK = 'dsh-snapshot-defer:'
const WARN_MARK = 'dsh-snapshot-warning:'

const log = (text) => console.log(`snapshot: ${text}`)
const relative = (file) => path.relative(root, file).split(path.sep).join('/')
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'))

/**
 * `--installed <file>` writes only the bundle, for the layout of the release
 * package (`pnpm release:pack`): the CLI package is the root, the in-box
 * packages sit in its node_modules/@dsh/, third-party ones in its
 * node_modules/. Its root is left to the machine that builds the blob from it
 * (DSH_SNAPSHOT_ROOT; see apps/cli/src/snapshot/cache.ts).
 */
const installedArg = process.argv.indexOf('--installed')
const installedOut = installedArg > 0 ? path.resolve(process.argv[installedArg + 1] ?? '') : undefined

/** The checkout folder of each workspace package under packages/, with its name. */
function workspaceNames() {
  const names = new Map()
  for (const group of readdirSync(path.join(root, 'packages'))) {
    for (const name of readdirSync(path.join(root, 'packages', group))) {
      const file = path.join(root, 'packages', group, name, 'package.json')
      if (existsSync(file)) names.set(`packages/${group}/${name}/`, readJson(file).name)
    }
  }
  return names
}

/** A file's path relative to the root of the installation the bundle is for: the checkout, or the release package. */
const place = (() => {
  if (!installedOut) return relative
  const names = workspaceNames()
  return (file) => {
    const rel = relative(file)
    const inModules = rel.lastIndexOf('node_modules/')
    if (inModules >= 0) return rel.slice(inModules)
    if (rel.startsWith('apps/cli/')) return rel.slice('apps/cli/'.length)
    const folder = `${rel.split('/').slice(0, 3).join('/')}/`
    const name = names.get(folder)
    if (!name) throw new Error(`${rel} has no place in the release package`)
    return `node_modules/${name}/${rel.slice(folder.length)}`
  }
})()

/**
 * The in-box specifiers with the file Node loads for each (the `default`
 * condition: lib/), and for each shared package an in-box package that
 * depends on it (where it resolves from).
 */
function inBoxModules() {
  const modules = new Map()
  const sharedFrom = new Map()
  for (const dep of Object.keys(readJson(path.join(cliDir, 'package.json')).dependencies ?? {})) {
    if (!dep.startsWith('@dsh/')) continue
    const dir = realpathSync(path.join(cliDir, 'node_modules', dep))
    const manifest = readJson(path.join(dir, 'package.json'))
    for (const [key, target] of Object.entries(manifest.exports ?? {})) {
      const file = typeof target === 'string' ? target : target.default
      if (file) modules.set(key === '.' ? dep : `${dep}/${key.slice(2)}`, place(path.join(dir, file)))
    }
    for (const name of SHARED)
      if (manifest.dependencies?.[name] && !sharedFrom.has(name)) sharedFrom.set(name, path.join(dir, 'package.json'))
  }
  return { modules, sharedFrom }
}

/** The folder of the package a file belongs to (nested package.json files without a name, like dist/esm/, do not count). */
function packageRoot(file) {
  let dir = path.dirname(file)
  while (!existsSync(path.join(dir, 'package.json')) || !readJson(path.join(dir, 'package.json')).name)
    dir = path.dirname(dir)
  return dir
}

const isNative = (dir) => existsSync(path.join(dir, 'binding.gyp')) || existsSync(path.join(dir, 'prebuilds'))

/** What the launcher's stubs need of a module that stays outside: its keys, and its plain-data values. */
function describeModule(loaded, withData) {
  const keys = Reflect.ownKeys(loaded).filter((key) => typeof key === 'string')
  const data = {}
  if (withData) {
    for (const key of keys) {
      const value = loaded[key]
      // Small values only: http2.constants (9 KB) is read at load time, tls.rootCertificates (220 KB) is not.
      if (isPlainData(value) && JSON.stringify(value).length <= 32_768) data[key] = value
    }
  }
  const module = Object.prototype.toString.call(loaded) === '[object Module]'
  return { keys, esModule: loaded.__esModule === true, module, ...(withData ? { data } : {}) }
}

function isPlainData(value, depth = 0) {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return true
  if (depth > 3 || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) return false
  return Object.values(value).every((v) => isPlainData(v, depth + 1))
}

async function bundle(modules, sharedFrom) {
  const tsdownRequire = createRequire(fileURLToPath(import.meta.resolve('tsdown')))
  const { rolldown } = await import(tsdownRequire.resolve('rolldown'))
  const externals = new Map()
  const entryImports = [...modules.keys(), ...sharedFrom.keys()]
  const plugin = {
    name: 'dsh-snapshot',
    resolveId: {
      order: 'pre',
      async handler(id, importer, options) {
        if (id === ENTRY) return id
        if (!importer || id.startsWith('\0') || id.startsWith('node:')) return null
        const shared = importer === ENTRY ? sharedFrom.get(id) : undefined
        const from = importer === ENTRY ? (shared ?? path.join(cliDir, 'package.json')) : importer
        const resolved = await this.resolve(id, from, { ...options, skipSelf: true })
        if (!resolved || resolved.external) return resolved
        if (shared) modules.set(id, place(resolved.id))
        const bare = !/^[./]/.test(id)
        const pkg = packageRoot(resolved.id)
        const name = readJson(path.join(pkg, 'package.json')).name
        const outside =
          isNative(pkg) ||
          LOCATES_OWN_FILES.has(name) ||
          LAZY_PACKAGES.has(name) ||
          (bare && LAZY_SPECIFIERS.has(id)) ||
          LAZY_FILES.some((pattern) => pattern.test(resolved.id))
        if (!outside) return resolved
        // Loaded with require() at run time: take the CommonJS entry where the package has one.
        let file = resolved.id
        if (bare) {
          try {
            file = createRequire(from).resolve(id)
          } catch {
            // ESM only: require() loads the ESM file
          }
        }
        externals.set(place(file), file)
        return { id: `dsh-external:${place(file)}`, external: true }
      },
    },
    load(id) {
      if (id !== ENTRY) return null
      const main = JSON.stringify(path.join(cliDir, 'src/snapshot/main.ts'))
      const warm = JSON.stringify(fileURLToPath(new URL('./warm-up.mjs', import.meta.url)))
      const importers = entryImports.map((s) => `  ${JSON.stringify(s)}: () => import(${JSON.stringify(s)}),`)
      return [
        `import { prepare } from ${main}`,
        `import { warmUp } from ${warm}`,
        `const importers = {\n${importers.join('\n')}\n}`,
        // Once every module is evaluated, and before the build puts back what it changed, run the warm-up.
        `const host = globalThis[Symbol.for('dsh.snapshot')]`,
        `const finishBuild = host.finishBuild`,
        `const deferred = (process.env.DSH_SNAPSHOT_DEFER ?? '').split(',')`,
        `const evaluated = Object.keys(importers).filter((specifier) => !deferred.includes(specifier))`,
        `host.finishBuild = () => warmUp((specifier) => importers[specifier](), evaluated)`,
        `  .catch((error) => console.error(${JSON.stringify(WARN_MARK)} + JSON.stringify(\`the warm-up failed, a start will compile more: \${error?.stack ?? error}\`)))`,
        `  .finally(finishBuild)`,
        `prepare(importers, deferred)`,
        '',
      ].join('\n')
    },
    transform(code, id) {
      // cordis and schemastery ship esbuild's keepNames helper, which sets the
      // name of every closure they make (proxy handlers on each context
      // access, a defineProperty each). Their code is not minified, so the
      // names are there without it: here it returns its argument.
      const named = code.includes(KEEP_NAMES_HELPER)
      if (named) code = code.replace(KEEP_NAMES_HELPER, 'var __name = (target) => target;')
      if (!code.includes('import.meta')) return named ? code : null
      // A module's own URL is its file in the installation: lib/ for our packages.
      const checkout = relative(id)
      const file = checkout.includes('node_modules/')
        ? place(id)
        : place(path.join(root, checkout.replace('/src/', '/lib/').replace(/\.ts$/, '.js')))
      // `require` made from the module's own URL is the bundle's require: what it loads is bundled.
      return code
        .replace(/^const require = createRequire\(import\.meta\.url\)\n/m, '')
        .replaceAll('import.meta.url', `__dshFileUrl(${JSON.stringify(file)})`)
    },
  }
  const build = await rolldown({
    input: ENTRY,
    platform: 'node',
    resolve: { conditionNames: ['dsh-source', 'node', 'import', 'require', 'default'] },
    plugins: [plugin],
    logLevel: 'silent',
    onLog: () => {},
  })
  // No comments: the bundle's source text is part of the heap the snapshot holds.
  const { output } = await build.generate({
    format: 'cjs',
    codeSplitting: false,
    comments: false,
  })
  await build.close()
  return { code: output[0].code, externals }
}

/** The module behind the bundle's `import()` at run time (lib/snapshot/import.cjs of the installation). */
const helper = 'module.exports = (specifier) => import(specifier)\n'

/** Writes the script `node --build-snapshot` runs: the build facts, the prelude, then the bundle in the prelude's require. */
function writeBundle(file, code, modules, externals) {
  const require = createRequire(import.meta.url)
  const build = {
    root: installedOut ? null : root,
    cliDir: installedOut ? '.' : 'apps/cli',
    importHelper: installedOut ? 'lib/snapshot/import.cjs' : importHelper,
    files: Object.fromEntries(modules),
    externals: Object.fromEntries(
      [...externals].map(([rel, file]) => [rel, describeModule(createRequire(file)(file), false)]),
    ),
    unsafeBuiltins: Object.fromEntries(UNSAFE_BUILTINS.map((name) => [name, describeModule(require(name), true)])),
  }
  // The bundle's own dynamic imports go through the launcher's (see prelude.cjs).
  // ASCII only: V8 keeps a source with any other character at two bytes per character.
  const body = code
    .replace(/(?<![\w$.])import\(/g, '__dshImport(')
    .replace(/[^\x00-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  const prelude = readFileSync(path.join(cliDir, 'src/snapshot/prelude.cjs'), 'utf8')
  mkdirSync(path.dirname(file), { recursive: true })
  writeFileSync(
    file,
    `const __dshBuild = ${JSON.stringify(build)};\n${prelude}\n;(function (require) {\n${body}\n})(__dshRequire);\n`,
  )
  if (installedOut) return
  const helperFile = path.join(root, importHelper)
  if (!existsSync(helperFile) || readFileSync(helperFile, 'utf8') !== helper) writeFileSync(helperFile, helper)
}

/** One `node --build-snapshot` run that evaluates every module but `deferred`: `{ ok }`, `{ defer: { specifier, reason } }` or `{ crash }`. */
function attempt(script, tmpBlob, deferred) {
  rmSync(tmpBlob, { force: true })
  const result = spawnSync(process.execPath, ['--snapshot-blob', tmpBlob, '--build-snapshot', script], {
    cwd: root,
    env: { ...process.env, DSH_SNAPSHOT_DEFER: deferred.join(','), NODE_OPTIONS: '' },
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  })
  const output = `${result.stdout}\n${result.stderr}`
  const mark = result.stderr.split('\n').find((line) => line.startsWith(DEFER_MARK))
  if (result.status === 3 && mark) return { defer: JSON.parse(mark.slice(DEFER_MARK.length)) }
  if (result.status === 0 && existsSync(tmpBlob)) {
    for (const line of result.stderr.split('\n'))
      if (line.startsWith(WARN_MARK)) console.warn(`snapshot: WARNING: ${JSON.parse(line.slice(WARN_MARK.length))}`)
    return { ok: true }
  }
  // V8 names what it could not serialize ("global handle not serialized: ... <BlockList ...>").
  const kinds = [...new Set([...output.matchAll(/- prototype: \S+ <(\w+)/g)].map((m) => m[1]))]
  const first = output
    .split('\n')
    .find(
      (line) =>
        line.trim() &&
        !/Warning: It's not yet fully verified|^It may still work|^To request support|trace-warnings/.test(line),
    )
  return {
    crash: `exited ${result.status ?? result.signal}${kinds.length ? ` (objects it cannot serialize: ${kinds.join(', ')})` : ''}: ${first ?? ''}`,
  }
}

/**
 * Builds the blob, deferring the modules that cannot be evaluated at build
 * time: one that throws while loading is deferred at once; when V8 cannot
 * serialize the heap (a native handle made at load time), a bisection over
 * the evaluation order finds the first module whose evaluation causes it.
 * Resolves with the deferred specifiers.
 */
function buildBlob(script, tmpBlob, order) {
  const deferred = [...DEFER]
  for (;;) {
    const result = attempt(script, tmpBlob, deferred)
    if (result.ok) return deferred
    if (result.defer) {
      const { specifier, reason } = result.defer
      if (deferred.includes(specifier)) throw new Error(`${specifier} failed again after being deferred:\n${reason}`)
      deferred.push(specifier)
      log(`${specifier} is evaluated at run time: ${reason.split('\n')[0]}`)
      continue
    }
    const candidates = order.filter((specifier) => !deferred.includes(specifier))
    const crashesWith = (count) => !attempt(script, tmpBlob, [...deferred, ...candidates.slice(count)]).ok
    if (crashesWith(0)) throw new Error(`node --build-snapshot ${result.crash}`)
    let low = 1
    let high = candidates.length
    while (low < high) {
      const mid = (low + high) >> 1
      if (crashesWith(mid)) high = mid
      else low = mid + 1
    }
    const culprit = candidates[low - 1]
    deferred.push(culprit)
    console.warn(
      `snapshot: WARNING: ${culprit} is evaluated at run time: the snapshot cannot hold what it makes at load time; node --build-snapshot ${result.crash}. Make that lazy, or add it to DEFER in scripts/snapshot/build.mjs to skip this search.`,
    )
  }
}

/**
 * The shell launcher: exec node with the blob when it fits, else the plain
 * entry. It fits when the node on PATH is the binary that built it, unchanged
 * (path, and a modification time equal to the stamp file's, copied from the
 * binary at build time), and NODE_OPTIONS holds only options that leave V8's
 * configuration alone: any V8 flag (--max-old-space-size, ...) makes node
 * refuse the blob ("built with different V8 configurations"). Commands that
 * boot no tree (dumps, help, version) take the plain entry, which is faster
 * for them; both entries behave the same, so an app argument that looks like
 * one of these flags only changes the speed. The script starts no process
 * of its own before node (a fork costs several ms on small machines): it
 * searches PATH itself and compares times with `test`.
 */
function writeLauncher(withBlob) {
  const node = process.execPath
  const quoted = `'${node.replaceAll("'", "'\\''")}'`
  const fits = withBlob && copyTime(node, stampFile)
  const script = `#!/bin/sh
# The dsh launcher, written by scripts/snapshot/build.mjs. Runs node from the
# startup snapshot lib/snapshot/dsh.blob when the blob fits (see below), else
# the plain entry lib/bin.js.
self=$0
while [ -L "$self" ]; do
  link=$(readlink "$self")
  case $link in /*) self=$link ;; *) self=\${self%/*}/$link ;; esac
done
case $self in /*) ;; *) self=$PWD/$self ;; esac
lib=\${self%/*}
blob=$lib/snapshot/dsh.blob
stamp=$lib/snapshot/node.stamp
fits=
${
  fits
    ? `# The first node on PATH, found without a subshell.
node=
set -f
ifs=$IFS
IFS=:
for dir in $PATH; do
  if [ -f "\${dir:-.}/node" ] && [ -x "\${dir:-.}/node" ]; then node=\${dir:-.}/node; break; fi
done
IFS=$ifs
set +f
# Built by ${node}; any other node binary, or this one replaced since (its time differs from the stamp's), cannot load it.
if [ -n "$node" ] && [ -f "$blob" ] && [ "$node" -ef ${quoted} ] && [ -f "$stamp" ] && ! [ "$node" -nt "$stamp" ] && ! [ "$node" -ot "$stamp" ]; then`
    : `# No startup snapshot was built.
if false; then`
}
  fits=1
  # Node options that change no V8 flag; anything else in NODE_OPTIONS runs the plain entry.
  set -f
  value=
  for word in $NODE_OPTIONS; do
    if [ -n "$value" ]; then value=; continue; fi
    case $word in
      --import|--require|-r) value=1 ;;
      --import=*|--require=*|--no-warnings|--no-deprecation|--trace-warnings|--trace-deprecation|--enable-source-maps|--use-openssl-ca|--use-bundled-ca) ;;
      *) fits= ;;
    esac
  done
  set +f
  # Dumps, help and version boot no plugin tree: the plain entry loads less than the snapshot holds.
  for arg in "$@"; do
    case $arg in --dump-config|--dump-default-config|--help|-h|--version|-V) fits= ;; esac
  done
fi
# glibc's malloc asks for transparent huge pages for its large blocks (the
# blob as node reads and copies it, above all): page faults are costly on
# virtual machines, and this saves about 70 ms of a start there. It keeps to
# two arenas: each further arena a thread of node opens takes a huge page of
# its own (about 2 MB more peak memory for a one-shot task). A value the user
# set for either wins. dsh puts the user's GLIBC_TUNABLES back as it starts,
# so the commands it runs get theirs.
added=
case \${GLIBC_TUNABLES-} in *glibc.malloc.hugetlb=*) ;; *) added=glibc.malloc.hugetlb=1 ;; esac
case \${GLIBC_TUNABLES-} in *glibc.malloc.arena_max=*) ;; *) added=\${added:+$added:}glibc.malloc.arena_max=2 ;; esac
if [ -n "$added" ]; then
  DSH_LAUNCHER_GLIBC_TUNABLES=\${GLIBC_TUNABLES+=$GLIBC_TUNABLES}
  GLIBC_TUNABLES=\${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}$added
  export DSH_LAUNCHER_GLIBC_TUNABLES GLIBC_TUNABLES
fi
if [ -n "$fits" ]; then
  exec "$node" --snapshot-blob "$blob" "$lib/bin.js" "$@"
fi
exec node "$lib/bin.js" "$@"
`
  writeFileSync(`${launcherFile}.tmp`, script, { mode: 0o755 })
  renameSync(`${launcherFile}.tmp`, launcherFile)
}

/** Gives `to` the modification time of `from`, to the nanosecond (`touch -r`); false when that fails. */
function copyTime(from, to) {
  const tmp = `${to}.${process.pid}.tmp`
  writeFileSync(tmp, `${from}\n`)
  const result = spawnSync('touch', ['-r', from, tmp], { stdio: 'ignore' })
  if (result.status !== 0) {
    rmSync(tmp, { force: true })
    console.warn(`snapshot: WARNING: touch -r ${from} failed; dsh will start the slower plain way`)
    return false
  }
  renameSync(tmp, to)
  return true
}

if (installedOut) {
  const { modules, sharedFrom } = inBoxModules()
  const { code, externals } = await bundle(modules, sharedFrom)
  const tmp = `${installedOut}.${process.pid}.tmp`
  writeBundle(tmp, code, modules, externals)
  renameSync(tmp, installedOut)
  writeFileSync(path.join(path.dirname(installedOut), 'import.cjs'), helper)
  log(`${installedOut}: the bundle for the release package (${modules.size} modules)`)
  process.exit(0)
}

// Other builds may run at the same time: everything is written under
// temporary names and renamed into place.
const started = performance.now()
rmSync(blobFile, { force: true })
const tmpScript = `${bundleFile}.${process.pid}.tmp`
const tmpBlob = `${blobFile}.${process.pid}.tmp`
let withBlob = false
try {
  const { modules, sharedFrom } = inBoxModules()
  const { code, externals } = await bundle(modules, sharedFrom)
  writeBundle(tmpScript, code, modules, externals)
  const deferred = buildBlob(tmpScript, tmpBlob, [...modules.keys()])
  renameSync(tmpScript, bundleFile)
  renameSync(tmpBlob, blobFile)
  withBlob = true
  const size = (statSync(blobFile).size / 2 ** 20).toFixed(1)
  log(
    `${relative(blobFile)} (${size} MiB, ${modules.size - deferred.length} of ${modules.size} modules evaluated) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  )
} catch (error) {
  console.warn(`snapshot: WARNING: no startup snapshot, dsh will start the slower plain way: ${error.stack ?? error}`)
} finally {
  rmSync(tmpScript, { force: true })
  rmSync(tmpBlob, { force: true })
}
writeLauncher(withBlob)
