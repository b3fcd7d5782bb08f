/** What the launcher was asked to do. App arguments are never interpreted here. */
export type LaunchRequest =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'plugin'; profile: string; pnpmArgs: string[] }
  | { kind: 'sessions'; args: string[] }
  | { kind: 'mcp'; profile: string | undefined; args: string[] }
  | {
      kind: 'boot'
      profile: string
      patches: string[]
      dump: 'config' | 'default' | null
      appArgs: string[]
    }

export class UsageError extends Error {
  override name = 'UsageError'
}

const RESERVED = new Set(['', '.', '..', 'node_modules'])

export function checkProfileName(name: string): string {
  if (RESERVED.has(name) || /[/\\]/.test(name) || name.trim() !== name || name.startsWith('-')) {
    throw new UsageError(`invalid profile name ${JSON.stringify(name)}`)
  }
  return name
}

/**
 * Parses the launcher's own flags, wherever they stand before a `--`: every
 * other token is an app argument, handed to the tree untouched and in order
 * (`dsh --profile headless --permission read-only --patch f.yml task`). A
 * `--` ends the launcher flags and is dropped: what follows is all app
 * arguments, launcher flag names included. `dsh <name>` is shorthand for
 * `dsh --profile <name>`; `plugin` as the first token is the profile package
 * manager, `sessions` the stored sessions.
 */
export function parseLauncherArgs(argv: readonly string[]): LaunchRequest {
  if (argv[0] === 'plugin') return parsePluginArgs(argv.slice(1))
  if (argv[0] === 'sessions') return { kind: 'sessions', args: argv.slice(1) }
  if (argv[0] === 'mcp') return parseMcpArgs(argv.slice(1))
  let profile: string | undefined
  const patches: string[] = []
  const dumps: string[] = []
  const appArgs: string[] = []
  let i = 0
  if (argv[0] !== undefined && !argv[0].startsWith('-')) {
    profile = checkProfileName(argv[0])
    i = 1
  }
  const flagValue = (flag: string): string => {
    const token = argv[i] as string
    if (token.startsWith(`${flag}=`)) return token.slice(flag.length + 1)
    i += 1
    const value = argv[i]
    if (value === undefined) throw new UsageError(`${flag} needs a value`)
    return value
  }
  for (; i < argv.length; i++) {
    const token = argv[i] as string
    const flag = token.split('=')[0]
    if (flag === '--profile') {
      const name = flagValue('--profile')
      if (profile !== undefined) throw new UsageError('select a profile only once')
      profile = checkProfileName(name)
    } else if (flag === '--patch') {
      const file = argv[i + 1] === undefined && !token.includes('=') ? '' : flagValue('--patch')
      if (file === '') throw new UsageError('--patch needs a path')
      patches.push(file)
    } else if (token === '--dump-config' || token === '--dump-default-config') {
      dumps.push(token)
    } else if ((token === '-h' || token === '--help') && profile === undefined) {
      return { kind: 'help' }
    } else if ((token === '-V' || token === '--version') && profile === undefined) {
      return { kind: 'version' }
    } else if (token === '--') {
      appArgs.push(...argv.slice(i + 1))
      break
    } else {
      appArgs.push(token)
    }
  }
  if (dumps.length > 1) throw new UsageError('--dump-config and --dump-default-config are mutually exclusive')
  const dump = dumps[0] === '--dump-config' ? 'config' : dumps[0] === '--dump-default-config' ? 'default' : null
  if (dump && appArgs.length) throw new UsageError(`config dumps take no app arguments, got ${appArgs.join(' ')}`)
  if (dump === 'default' && patches.length)
    throw new UsageError('--dump-default-config shows the bundle layers only and takes no --patch')
  if (profile === undefined) throw new UsageError('--profile <name> is required (try dsh --help)')
  return { kind: 'boot', profile, patches, dump, appArgs }
}

/** `dsh mcp [--profile <name>] <command...>`: the profile whose patch file holds the servers, else the home's. */
function parseMcpArgs(argv: readonly string[]): LaunchRequest {
  const [flag, name, ...rest] = argv
  if (flag === '--profile') {
    if (name === undefined) throw new UsageError('--profile needs a value')
    return { kind: 'mcp', profile: checkProfileName(name), args: rest }
  }
  if (flag?.startsWith('--profile='))
    return { kind: 'mcp', profile: checkProfileName(flag.slice('--profile='.length)), args: argv.slice(1) }
  return { kind: 'mcp', profile: undefined, args: [...argv] }
}

function parsePluginArgs(argv: readonly string[]): LaunchRequest {
  const [flag, name, ...rest] = argv
  let profile: string | undefined
  let pnpmArgs: string[]
  if (flag === '--profile' && name !== undefined) {
    profile = name
    pnpmArgs = rest
  } else if (flag?.startsWith('--profile=')) {
    profile = flag.slice('--profile='.length)
    pnpmArgs = argv.slice(1)
  } else {
    throw new UsageError('usage: dsh plugin --profile <name> <pnpm-args...>')
  }
  if (pnpmArgs.length === 0) throw new UsageError('plugin needs pnpm arguments to forward (e.g. add <package>)')
  return { kind: 'plugin', profile: checkProfileName(profile), pnpmArgs }
}

export const LAUNCHER_HELP = `Usage: dsh [--profile] <name> [options] [app-args...]
       dsh plugin --profile <name> <pnpm-args...>
       dsh sessions <list|search|show|export|reindex> [args...]
       dsh mcp [--profile <name>] <add|list|remove> [args...]

Boots a profile: an ordered stack of plugin bundles with your own YAML patch
layers on top. The launcher's options may stand anywhere before a \`--\`; every
other argument, and everything after \`--\`, goes to the app in order.

Options:
  --profile <name>        profile to boot ($DSH_HOME/profiles/<name>)
  --patch <file>          extra patch layer, applied last (repeatable)
  --dump-config           print the composed plugin tree and exit
  --dump-default-config   print the tree from the bundles alone and exit
  -V, --version           print the version
  -h, --help              print this help

Profiles shipped as templates: web, headless, sdk, sdk-minimal, acp, doctor.

Examples:
  dsh web                                   serve the browser app
  dsh web --help                            the web app's own options
  dsh --profile headless "run the tests"    one task, answer on stdout
  dsh --profile headless --dump-config      show the composed tree
  dsh mine --patch ./debug.yml              a custom profile plus an overlay
  dsh plugin --profile mine add ./my-plugin install a plugin into a profile
  dsh sessions search flaky test            find past sessions by their words
  dsh mcp add github npx -y @modelcontextprotocol/server-github   add an MCP server
  dsh doctor                                what this folder would use; sandbox, keys, Node
`
