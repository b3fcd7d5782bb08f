import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { lstat, readdir, readFile, unlink } from 'node:fs/promises'
import path from 'node:path'
import { ConfigError, isPlainObject } from '@dsh/loader/compose'
import { readBundleDeclaration } from './layers.ts'
import { initProfile, openProfile, type Profile, readManifest, TEMPLATES, writeManifest } from './profile.ts'

export interface PluginCommandOptions {
  home: string
  profile: string
  pnpmArgs: string[]
  cwd: string
  writeErr: (text: string) => void
}

const LOCAL_SPEC = /^(file:|link:)?(\.{1,2}(\/.*)?|\/.*)$/

const GIT_SPEC = /^(git\+|github:)|\.git(#.*)?$/

/**
 * The environment pnpm runs with: pinned to the profile folder as its
 * workspace, so neither a workspace above the profile nor one inherited from
 * a parent pnpm process (NPM_CONFIG_WORKSPACE_DIR) can capture the install.
 */
function pnpmEnv(profileDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const key of Object.keys(env)) if (key.toUpperCase() === 'NPM_CONFIG_WORKSPACE_DIR') delete env[key]
  env.NPM_CONFIG_WORKSPACE_DIR = profileDir
  return env
}

/** Relative paths are meant from where the user typed them, not from the profile folder. */
export function anchorLocalSpecs(args: string[], cwd: string): string[] {
  return args.map((arg) => {
    const match = LOCAL_SPEC.exec(arg)
    if (!match) return arg
    const prefix = match[1] ?? ''
    return `${prefix}${path.resolve(cwd, arg.slice(prefix.length))}`
  })
}

/**
 * `dsh plugin --profile <name> <pnpm args>`: runs pnpm in the profile folder,
 * then adds installed packages that declare `dsh.bundle` to the profile's
 * bundle list and drops ones that are gone. Resolves with pnpm's exit code.
 */
export async function runPluginCommand(options: PluginCommandOptions): Promise<number> {
  const { writeErr } = options
  let profile: Profile
  try {
    const existed = existsSync(path.join(options.home, 'profiles', options.profile, 'package.json'))
    profile = await openProfile(options.home, options.profile, { create: true })
    if (!existed) writeErr(`dsh: initialized profile ${profile.name} at ${profile.dir}\n`)
  } catch (error) {
    if (error instanceof ConfigError) {
      writeErr(`dsh: ${error.message}\n`)
      return 1
    }
    throw error
  }
  // Older or hand-made profiles may lack pnpm-workspace.yaml; without it pnpm would
  // look for a workspace in the folders above the profile. Missing files only.
  await initProfile(profile.dir, profile.name, profile.bundles)
  const args = anchorLocalSpecs(options.pnpmArgs, options.cwd)
  let spawnFailed = false
  const code = await new Promise<number>((resolve) => {
    const child = spawn('pnpm', args, {
      cwd: profile.dir,
      env: pnpmEnv(profile.dir),
      stdio: ['inherit', 'inherit', 'inherit'],
      shell: process.platform === 'win32',
    })
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') {
        spawnFailed = true
        writeErr('dsh: pnpm not found on PATH; install pnpm to manage profile plugins\n')
        resolve(127)
      } else {
        spawnFailed = true
        writeErr(`dsh: could not run pnpm: ${error.message}\n`)
        resolve(1)
      }
    })
    child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)))
  })
  if (code !== 0) {
    if (spawnFailed) return code
    writeErr(`dsh: pnpm failed in profile directory ${profile.dir}\n`)
    if (args.some((arg) => GIT_SPEC.test(arg))) {
      writeErr(
        `dsh: hint: pnpm 10 and later refuse to run the prepare script of a git dependency until you allow it; add the package key pnpm printed under allowBuilds in ${path.join(profile.dir, 'pnpm-workspace.yaml')}, then run the command again\n`,
      )
    }
    return code
  }
  try {
    await pruneStaleLinks(profile)
    await reconcileBundles(profile, options.profile, writeErr)
  } catch (error) {
    writeErr(`dsh: ${(error as Error).message}\n`)
    return 1
  }
  return 0
}

const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies']

/**
 * With `nodeLinker: hoisted`, pnpm 10 leaves the symlink of a removed
 * `link:` dependency (`pnpm add ./folder`) in node_modules, where the
 * package would stay importable. Hoisted installs place only direct `link:`
 * dependencies as top-level symlinks, so a top-level link that no manifest
 * dependency names is such a leftover; only the link goes, never its target.
 * Other linkers (isolated) symlink hoisted transitive packages at the top, so
 * nothing is pruned unless pnpm's own state says the layout is hoisted.
 */
async function pruneStaleLinks(profile: Profile): Promise<void> {
  const nodeModules = path.join(profile.dir, 'node_modules')
  const state = await readFile(path.join(nodeModules, '.modules.yaml'), 'utf8').catch(() => '')
  if (!/["']?nodeLinker["']?\s*:\s*["']?hoisted\b/.test(state)) return
  const manifest = await readManifest(profile.manifestPath)
  const wanted = new Set(
    DEPENDENCY_FIELDS.flatMap((field) => (isPlainObject(manifest[field]) ? Object.keys(manifest[field]) : [])),
  )
  const list = async (dir: string) => readdir(dir).catch(() => [] as string[])
  const candidates: string[] = []
  for (const entry of await list(nodeModules)) {
    if (entry.startsWith('.')) continue
    if (!entry.startsWith('@')) candidates.push(entry)
    else for (const child of await list(path.join(nodeModules, entry))) candidates.push(`${entry}/${child}`)
  }
  for (const name of candidates) {
    if (wanted.has(name)) continue
    const file = path.join(nodeModules, name)
    const stat = await lstat(file).catch(() => undefined)
    if (stat?.isSymbolicLink()) await unlink(file)
  }
}

/** Keeps `dsh.profile.bundles` in step with the profile's installed dependencies. */
async function reconcileBundles(before: Profile, name: string, writeErr: (text: string) => void): Promise<void> {
  const manifest = await readManifest(before.manifestPath)
  const profile: Profile = { ...before, manifest }
  const deps = isPlainObject(manifest.dependencies) ? Object.keys(manifest.dependencies) : []
  const template = new Set(TEMPLATES[name] ?? [])
  const bundles = [...before.bundles]
  const installed = new Set<string>()
  const previousDeps = isPlainObject(before.manifest.dependencies) ? before.manifest.dependencies : {}
  for (const dep of deps) {
    const dir = path.join(profile.dir, 'node_modules', dep)
    if (!existsSync(path.join(dir, 'package.json'))) continue
    const bundle = await readBundleDeclaration(dep, dir)
    if (bundle) {
      installed.add(dep)
      if (!bundles.includes(dep)) {
        bundles.push(dep)
        writeErr(`dsh: added bundle ${dep} to profile ${name}\n`)
      }
    } else if (!Object.hasOwn(previousDeps, dep) && !before.bundles.includes(dep)) {
      // Said once, when the package arrives; a later update that adds dsh.bundle activates it.
      writeErr(`dsh: ${dep} declares no dsh.bundle; it stays a plain library of profile ${name}\n`)
    }
  }
  const next = bundles.filter((bundle) => {
    if (template.has(bundle) || installed.has(bundle)) return true
    const isOrWasDependency = Object.hasOwn(previousDeps, bundle) || deps.includes(bundle)
    if (!isOrWasDependency) return true
    writeErr(`dsh: removed bundle ${bundle} from profile ${name}\n`)
    return false
  })
  if (next.length !== before.bundles.length || next.some((b, i) => b !== before.bundles[i]))
    await writeManifest(profile, next)
}
