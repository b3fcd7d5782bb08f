#!/usr/bin/env node
// Installs the Debian packages the sandbox and the tests need when they are
// missing: bubblewrap (bwrap, the sandbox), slirp4netns (network `on`) and
// chromium (the browser tests). Run by `npm run quickstart` and `.ci/run`.
//
// A package counts as present when its command is on PATH. Missing ones are
// installed with apt-get when running as root, through sudo when sudo is on
// PATH, and otherwise the script stops (exit 1) with the exact command to run.
import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** Debian package and the command that shows it is installed. */
export const SYSTEM_PACKAGES = [
  { package: 'bubblewrap', command: 'bwrap' },
  { package: 'slirp4netns', command: 'slirp4netns' },
  { package: 'chromium', command: 'chromium' },
]

/** The executable `command` on `searchPath`, or undefined. */
export function findCommand(command, searchPath = process.env.PATH ?? '') {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue
    const file = path.join(dir, command)
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {
      // not here
    }
  }
  return undefined
}

/** The Debian packages whose command is not on PATH. */
export function missingPackages(searchPath = process.env.PATH ?? '') {
  return SYSTEM_PACKAGES.filter((entry) => !findCommand(entry.command, searchPath)).map((entry) => entry.package)
}

/** The shell command that installs `packages`, as a user would type it (with or without sudo). */
export function installCommand(packages, viaSudo) {
  const sudo = viaSudo ? 'sudo ' : ''
  return `${sudo}apt-get update && ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y ${packages.join(' ')}`
}

function run(argv) {
  console.error(`> ${argv.join(' ')}`)
  const result = spawnSync(argv[0], argv.slice(1), { stdio: 'inherit' })
  if (result.error) throw result.error
  if (result.status !== 0) {
    console.error(`system packages: ${argv.join(' ')} exited with ${result.status ?? result.signal}`)
    process.exit(result.status ?? 1)
  }
}

/** Installs what is missing, or exits 1 with the command to run. Prints nothing when all is there. */
export function ensureSystemPackages() {
  const missing = missingPackages()
  if (missing.length === 0) return
  const isRoot = process.getuid?.() === 0
  const viaSudo = !isRoot && findCommand('sudo') !== undefined
  if (!findCommand('apt-get')) {
    console.error(
      `system packages: missing ${missing.join(', ')} and apt-get is not on PATH: ` +
        "install them with your system's package manager, then run this again",
    )
    process.exit(1)
  }
  if (!isRoot && !viaSudo) {
    console.error(`system packages: missing ${missing.join(', ')}; as root, run:\n  ${installCommand(missing, false)}`)
    process.exit(1)
  }
  console.error(`system packages: installing ${missing.join(', ')}`)
  const prefix = viaSudo ? ['sudo'] : []
  run([...prefix, 'apt-get', 'update', '-qq'])
  run([...prefix, 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '-qq', ...missing])
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) ensureSystemPackages()
