import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { ConfigError, isPlainObject } from '@dsh/loader/compose'
import { readBundleDeclaration } from './layers.ts'
import { openProfile, type Profile, readManifest, TEMPLATES, writeManifest } from './profile.ts'

export interface PluginCommandOptions {
  home: string
  profile: string
  pnpmArgs: string[]
  cwd: string
  writeErr: (text: string) => void
}

const LOCAL_SPEC = /^(file:|link:)?(\.{1,2}(\/.*)?|\/.*)$/

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
  const args = anchorLocalSpecs(options.pnpmArgs, options.cwd)
  const code = await new Promise<number>((resolve) => {
    const child = spawn('pnpm', args, { cwd: profile.dir, stdio: ['inherit', 'inherit', 'inherit'] })
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') {
        writeErr('dsh: pnpm not found on PATH; install pnpm to manage profile plugins\n')
        resolve(127)
      } else {
        writeErr(`dsh: could not run pnpm: ${error.message}\n`)
        resolve(1)
      }
    })
    child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)))
  })
  if (code !== 0) {
    if (code !== 127) writeErr(`dsh: pnpm failed in profile directory ${profile.dir}\n`)
    return code
  }
  try {
    await reconcileBundles(profile, options.profile, writeErr)
  } catch (error) {
    writeErr(`dsh: ${(error as Error).message}\n`)
    return 1
  }
  return 0
}

/** Keeps `dsh.profile.bundles` in step with the profile's installed dependencies. */
async function reconcileBundles(before: Profile, name: string, writeErr: (text: string) => void): Promise<void> {
  const manifest = await readManifest(before.manifestPath)
  const profile: Profile = { ...before, manifest }
  const deps = isPlainObject(manifest.dependencies) ? Object.keys(manifest.dependencies) : []
  const template = new Set(TEMPLATES[name] ?? [])
  const bundles = [...before.bundles]
  const installed = new Set<string>()
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
    } else if (!before.bundles.includes(dep)) {
      writeErr(`dsh: ${dep} declares no dsh.bundle; it stays a plain library of profile ${name}\n`)
    }
  }
  const previousDeps = isPlainObject(before.manifest.dependencies) ? before.manifest.dependencies : {}
  const next = bundles.filter((bundle) => {
    if (template.has(bundle) || installed.has(bundle)) return true
    const isOrWasDependency = Object.hasOwn(previousDeps, bundle) || deps.includes(bundle)
    if (!isOrWasDependency) return true
    writeErr(`dsh: removed bundle ${bundle} from profile ${name}\n`)
    return false
  })
  if (next.length !== before.bundles.length || next.some((b, i) => b !== before.bundles[i])) await writeManifest(profile, next)
}
