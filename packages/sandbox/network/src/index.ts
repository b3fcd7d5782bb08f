import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type Context, Schema, stringList } from '@dsh/cordis'
import { type NetworkAttachment, type NetworkGrantRequest, SandboxNetwork } from '@dsh/sandbox'
import { DEFAULT_ALLOWED_HOSTS, parseHostPatterns } from './hosts.ts'
import { type NetworkNamespace, openNamespace } from './namespace.ts'
import { type AddressRange, FilteringProxy } from './proxy.ts'

export { DEFAULT_ALLOWED_HOSTS, matchesHost, parseHostPattern, type HostPattern } from './hosts.ts'
export { FilteringProxy, parseAuthority } from './proxy.ts'

export const name = 'sandbox-network'

export interface SandboxNetworkConfig {
  allowedHosts: string[]
  extraAllowedHosts: string[]
  staticHosts: Record<string, string>
  publicRanges: string[]
  proxyPort: number
  bwrapPath: string
  slirp4netnsPath: string
  startTimeoutMs: number
  resolveTimeoutMs: number
}

export const Config: Schema<SandboxNetworkConfig> = Schema.object({
  allowedHosts: stringList(
    'Hosts commands with network "proxy" reach without asking: `example.com` or `*.example.com`.',
    [...DEFAULT_ALLOWED_HOSTS],
  ),
  extraAllowedHosts: stringList(
    'More allowed hosts, added to allowedHosts (so a patch need not restate the defaults).',
  ),
  staticHosts: Schema.dict(Schema.string())
    .default({})
    .description('Names the proxy resolves without DNS: name → IP address (a pinned mirror, a test host).'),
  publicRanges: stringList(
    'CIDR ranges the proxy treats as public although they are private or local (an on-site mirror).',
  ),
  proxyPort: Schema.natural()
    .min(1)
    .max(65_535)
    .default(3128)
    .description("The proxy's port on the namespace's own 127.0.0.1."),
  bwrapPath: Schema.string().min(1).default('bwrap').description('bubblewrap, which makes the network namespaces.'),
  slirp4netnsPath: Schema.string()
    .min(1)
    .default('slirp4netns')
    .description('slirp4netns, which gives network "on" its outbound connections (Debian package slirp4netns).'),
  startTimeoutMs: Schema.natural().min(1).default(10_000).description('How long making a namespace may take.'),
  resolveTimeoutMs: Schema.natural().min(1).default(5_000).description('How long the proxy waits for a name lookup.'),
})

/** slirp4netns's fixed addresses inside the namespace: its DNS forwarder. */
const SLIRP_DNS = '10.0.2.3'

/**
 * `ctx.sandboxNetwork` on Linux. Network `proxy`: one namespace per dsh
 * process whose only way out is dsh's filtering proxy, listening on that
 * namespace's loopback. Network `on`: another namespace with outbound
 * connections through slirp4netns, which never forwards to the host's
 * loopback. Both are made on first use and end with dsh.
 */
export class LocalSandboxNetwork extends SandboxNetwork {
  static Config = Config

  private readonly settings: SandboxNetworkConfig
  private readonly proxy: FilteringProxy
  private proxied: Promise<NetworkNamespace> | undefined
  private outbound: Promise<{ namespace: NetworkNamespace; resolvConf: string }> | undefined
  private readonly children = new Set<ChildProcess>()
  private folder: string | undefined

  constructor(ctx: Context, config: SandboxNetworkConfig) {
    super(ctx)
    this.settings = config
    const allowed = [
      ...parseHostPatterns(config.allowedHosts, 'allowedHosts'),
      ...parseHostPatterns(config.extraAllowedHosts, 'extraAllowedHosts'),
    ]
    const staticHosts = new Map<string, string>()
    for (const [host, address] of Object.entries(config.staticHosts)) {
      if (isIP(address) === 0)
        throw new Error(`sandbox-network: staticHosts.${host}: ${JSON.stringify(address)} is not an IP address`)
      staticHosts.set(host.toLowerCase(), address)
    }
    const publicRanges = config.publicRanges.map((range, index): AddressRange => {
      const [address, bits] = range.split('/')
      const family = isIP(address ?? '')
      const prefix = Number(bits)
      if (family === 0 || !/^\d+$/.test(bits ?? '') || prefix > (family === 4 ? 32 : 128)) {
        throw new Error(
          `sandbox-network: publicRanges[${index}]: ${JSON.stringify(range)} is not a CIDR range such as 10.1.0.0/16`,
        )
      }
      return { address: address as string, prefix, family: family === 4 ? 'ipv4' : 'ipv6' }
    })
    this.proxy = new FilteringProxy({ allowed, staticHosts, publicRanges, resolveTimeoutMs: config.resolveTimeoutMs })
    ctx.on('session/closed', async (session) => this.proxy.forgetSession(session.id))
    ctx.effect(() => () => this.stop(), 'sandbox-network: close the namespaces')
  }

  grant(request: NetworkGrantRequest): string {
    return this.proxy.grant(request)
  }

  async attach(mode: 'proxy' | 'on', token?: string): Promise<NetworkAttachment | { refused: string }> {
    try {
      if (mode === 'proxy') {
        if (!token) return { refused: 'no proxy grant was given' }
        const namespace = await (this.proxied ??= this.openProxied())
        const url = FilteringProxy.url(token, this.settings.proxyPort)
        const env: Record<string, string> = { NO_PROXY: 'localhost,127.0.0.1,::1', no_proxy: 'localhost,127.0.0.1,::1' }
        for (const key of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) env[key] = url
        return { ...where(namespace), env }
      }
      const { namespace, resolvConf } = await (this.outbound ??= this.openOutbound())
      return { ...where(namespace), env: {}, resolvConf }
    } catch (error) {
      if (mode === 'proxy') this.proxied = undefined
      else this.outbound = undefined
      return { refused: (error as Error).message }
    }
  }

  private async openProxied(): Promise<NetworkNamespace> {
    const namespace = await openNamespace({
      bwrap: this.settings.bwrapPath,
      listenPort: this.settings.proxyPort,
      timeoutMs: this.settings.startTimeoutMs,
    })
    if (!namespace.listener) throw new Error('the proxy namespace came without its listening socket')
    await this.proxy.serve(namespace.listener)
    return namespace
  }

  private async openOutbound(): Promise<{ namespace: NetworkNamespace; resolvConf: string }> {
    const namespace = await openNamespace({ bwrap: this.settings.bwrapPath, timeoutMs: this.settings.startTimeoutMs })
    try {
      await this.startSlirp(namespace)
    } catch (error) {
      namespace.close()
      throw error
    }
    this.folder ??= mkdtempSync(path.join(tmpdir(), 'dsh-network-'))
    const resolvConf = path.join(this.folder, 'resolv.conf')
    writeFileSync(resolvConf, `nameserver ${SLIRP_DNS}\n`, { mode: 0o644 })
    return { namespace, resolvConf }
  }

  /** Runs slirp4netns on the namespace until dsh ends; resolves once it reports ready. */
  private startSlirp(namespace: NetworkNamespace): Promise<void> {
    const args = ['--configure', '--mtu=65520', '--disable-host-loopback', '--ready-fd=3', '--exit-fd=4']
    if (namespace.userPath) args.push(`--userns-path=${namespace.userPath}`)
    args.push('--netns-type=path', namespace.path, 'tap0')
    return new Promise((resolve, reject) => {
      const child = spawn(this.settings.slirp4netnsPath, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] })
      this.children.add(child)
      let stderr = ''
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8')
      })
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        reject(new Error(`slirp4netns did not get ready within ${this.settings.startTimeoutMs}ms`))
      }, this.settings.startTimeoutMs)
      child.on('error', (error) => {
        clearTimeout(timer)
        reject(new Error(`slirp4netns could not start (${error.message}); install the slirp4netns package`))
      })
      child.on('exit', (code) => {
        clearTimeout(timer)
        this.children.delete(child)
        this.outbound = undefined
        reject(new Error(`slirp4netns exited (${code ?? 'signal'}): ${stderr.trim() || 'no message'}`))
      })
      ;(child.stdio[3] as NodeJS.ReadableStream).once('data', () => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  private stop(): void {
    for (const child of this.children) child.kill('SIGKILL')
    this.children.clear()
    void this.proxied?.then((namespace) => namespace.close()).catch(() => undefined)
    void this.outbound?.then(({ namespace }) => namespace.close()).catch(() => undefined)
    this.proxy.close()
    if (this.folder) rmSync(this.folder, { recursive: true, force: true })
  }
}

function where(namespace: NetworkNamespace): Pick<NetworkAttachment, 'namespace' | 'userNamespace'> {
  return { namespace: namespace.path, ...(namespace.userPath ? { userNamespace: namespace.userPath } : {}) }
}

/** Provides `ctx.sandboxNetwork`. */
export function apply(ctx: Context, config: SandboxNetworkConfig) {
  ctx.plugin(LocalSandboxNetwork, config)
}
