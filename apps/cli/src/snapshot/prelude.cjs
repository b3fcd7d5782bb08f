'use strict'
// The module shim of the startup snapshot (see scripts/snapshot/build.mjs).
// The build script puts `const __dshBuild = {...}` above this file and the
// bundle, wrapped as `(function (require) { ... })(__dshRequire)`, below it.
// The bundle is evaluated by `node --build-snapshot`, where `require` loads
// built-in modules only and a few of them (http, tls, ...) cannot be
// serialized, so:
// - unsafe built-ins and native packages are lazy stubs until run time;
// - `import()` goes through a real file at run time (a script compiled into
//   the snapshot has no dynamic import of its own);
// - `import.meta.url` of a bundled module is its file in the installation.

const __dshBuiltin = require
const __dshPath = __dshBuiltin('node:path')
const __dshUrl = __dshBuiltin('node:url')
const __dshModule = __dshBuiltin('node:module')

const __dshHost = {
  /** True while the snapshot is being built; the launcher clears it when the process starts from the snapshot. */
  building: true,
  /**
   * The repository (installation) root the snapshot was built in: fixed by the
   * checkout's build, or, for the bundle of a release package, the folder the
   * package is installed in, named by whoever builds the blob from it.
   */
  root: __dshBuild.root ?? process.env.DSH_SNAPSHOT_ROOT,
  /** The CLI package's folder, relative to `root`. */
  cliDir: __dshBuild.cliDir,
  /** Each in-box specifier's file in the installation, relative to `root`. */
  files: __dshBuild.files,
  /** The bundled module being evaluated at build time, for error reports. */
  current: undefined,
}
globalThis[Symbol.for('dsh.snapshot')] = __dshHost

// Node creates these globals on first read by loading its own undici, which
// needs http: at build time they read as undefined (code that looks them up
// while loading sees no such global) and they are put back before the heap
// is serialized.
const __dshWebGlobals = ['FormData', 'Headers', 'Request', 'Response', 'MessageEvent']
  .map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)])
  .filter(([, descriptor]) => descriptor?.configurable)
for (const [name] of __dshWebGlobals)
  Object.defineProperty(globalThis, name, { configurable: true, get: () => undefined })
__dshHost.finishBuild = () => {
  for (const [name, descriptor] of __dshWebGlobals) Object.defineProperty(globalThis, name, descriptor)
}

function __dshFileUrl(relative) {
  return __dshUrl.pathToFileURL(__dshPath.join(__dshHost.root, relative)).href
}

function __dshNotNow(id, key) {
  return new Error(
    `${id} cannot be loaded while the startup snapshot is built (${__dshHost.current ?? 'bundle'} touched ${String(key)} at load time)`,
  )
}

// A stand-in for a module that must not load at build time. It reports the
// module's keys (recorded by the build script) so bundler interop can copy
// them, answers recorded plain data at build time, and forwards everything
// else to the real module, loaded on first use at run time.
function __dshStub(id, info, load) {
  let real
  // A function expression, not an arrow: the proxy must be constructible (`new Database(...)`) and keep `prototype`.
  // biome-ignore lint/complexity/useArrowFunction: see above
  const target = function () {}
  const fixed = Reflect.ownKeys(target).filter((key) => !Reflect.getOwnPropertyDescriptor(target, key).configurable)
  const keys = new Set([...info.keys, ...fixed])
  const resolve = (key) => {
    if (real === undefined) {
      if (__dshHost.building) throw __dshNotNow(id, key)
      real = load()
    }
    return real
  }
  const proxy = new Proxy(target, {
    get(_, key) {
      // Plain data of a built-in (STATUS_CODES, http2.constants, maxHeaderSize) answers without loading it:
      // the launcher runs the snapshot with no node option that could change it.
      if (info.data && Object.hasOwn(info.data, key)) return info.data[key]
      if (__dshHost.building) {
        if (key === '__esModule') return info.esModule
        if (info.early && Object.hasOwn(info.early, key)) return info.early[key]()
        // A key the module does not have answers as it would on the real module.
        if (!keys.has(key)) return Reflect.get(Object.prototype, key)
      }
      return Reflect.get(resolve(key), key)
    },
    has(_, key) {
      return __dshHost.building ? keys.has(key) : key in resolve(key)
    },
    ownKeys() {
      if (__dshHost.building) return [...keys]
      return [...new Set([...Reflect.ownKeys(resolve('ownKeys')), ...fixed])]
    },
    getOwnPropertyDescriptor(_, key) {
      if (fixed.includes(key)) return Reflect.getOwnPropertyDescriptor(target, key)
      if (__dshHost.building)
        return keys.has(key) ? { configurable: true, enumerable: true, writable: false, value: undefined } : undefined
      const descriptor = Reflect.getOwnPropertyDescriptor(resolve(key), key)
      return descriptor && { ...descriptor, configurable: true }
    },
    getPrototypeOf() {
      return __dshHost.building ? Object.prototype : Reflect.getPrototypeOf(resolve('prototype'))
    },
    set(_, key, value) {
      return Reflect.set(resolve(key), key, value)
    },
    defineProperty(_, key, descriptor) {
      return Reflect.defineProperty(resolve(key), key, descriptor)
    },
    deleteProperty(_, key) {
      return Reflect.deleteProperty(resolve(key), key)
    },
    apply(_, self, args) {
      return Reflect.apply(resolve('()'), self, args)
    },
    construct(_, args, newTarget) {
      const Real = resolve('new')
      return Reflect.construct(Real, args, newTarget === proxy ? Real : newTarget)
    },
  })
  return proxy
}

const __dshStubs = new Map()
const __dshExternalPrefix = 'dsh-external:'

// Early answers for built-in members that bundled code reads at load time
// and that come from modules which can be serialized.
const __dshEarly = {
  http: {
    IncomingMessage: () => __dshBuiltin('_http_incoming').IncomingMessage,
    Agent: () => __dshBuiltin('_http_agent').Agent,
    globalAgent: () => __dshBuiltin('_http_agent').globalAgent,
  },
}

function __dshRequire(id) {
  if (id.startsWith(__dshExternalPrefix)) {
    const relative = id.slice(__dshExternalPrefix.length)
    let stub = __dshStubs.get(id)
    if (!stub) {
      const file = __dshPath.join(__dshHost.root, relative)
      stub = __dshStub(relative, __dshBuild.externals[relative], () => __dshModule.createRequire(file)(file))
      __dshStubs.set(id, stub)
    }
    return stub
  }
  const bare = id.startsWith('node:') ? id.slice(5) : id
  const info = __dshBuild.unsafeBuiltins[bare]
  if (!info) return __dshBuiltin(id)
  if (!__dshHost.building) return __dshBuiltin(bare)
  let stub = __dshStubs.get(bare)
  if (!stub) {
    stub = __dshStub(bare, { ...info, early: __dshEarly[bare] }, () => __dshBuiltin(bare))
    __dshStubs.set(bare, stub)
  }
  return stub
}

let __dshDynamicImport
function __dshImport(specifier) {
  if (
    typeof specifier === 'string' &&
    (specifier.startsWith(__dshExternalPrefix) || __dshModule.isBuiltin(specifier))
  ) {
    return Promise.resolve().then(() => __dshNamespace(specifier))
  }
  if (__dshHost.building) return Promise.reject(__dshNotNow(String(specifier), 'import()'))
  if (!__dshDynamicImport) {
    const file = __dshPath.join(__dshHost.root, __dshBuild.importHelper)
    __dshDynamicImport = __dshModule.createRequire(file)(file)
  }
  return __dshDynamicImport(specifier)
}

// What import() yields for a module the bundle requires: an ES module's
// namespace as it is; for CommonJS, `default` is module.exports, next to its keys.
function __dshNamespace(specifier) {
  const loaded = __dshRequire(specifier)
  const info = specifier.startsWith(__dshExternalPrefix)
    ? __dshBuild.externals[specifier.slice(__dshExternalPrefix.length)]
    : undefined
  if (info?.module) return loaded
  const namespace = { default: loaded }
  for (const key of info ? info.keys : Object.keys(loaded)) {
    if (key !== 'default') Object.defineProperty(namespace, key, { enumerable: true, get: () => loaded[key] })
  }
  return namespace
}
