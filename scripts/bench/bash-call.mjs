// Harness overhead of one `bash` call: the tool through the whole pipeline
// (validation, permission-free default policy, shell seam, process-tree
// handling, output capture) against spawning `bash -c` directly. Measured with
// the sandbox off and with the default workspace-write bwrap sandbox (user
// namespace, seccomp, protected-path stand-ins, private /tmp), network off and
// through the filtering proxy.
import { spawn } from 'node:child_process'
import { importLib, median, ms, row, tempDir } from './common.mjs'
import { toolContext } from './tools.mjs'

const TARGET_MS = 15
const COMMAND = 'echo hello'

function direct(cwd) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn('bash', ['-c', COMMAND], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.resume()
    child.on('error', reject)
    child.on('close', () => resolve(performance.now() - started))
  })
}

export async function run({ runs }) {
  const box = await tempDir('bash-call')
  const tools = await toolContext()
  try {
    const timed = async (fn) => {
      const started = performance.now()
      await fn()
      return performance.now() - started
    }
    const spawnTimes = []
    const unsandboxed = []
    const sandboxed = []
    const proxied = []
    const { protectedProjectPaths } = await importLib('packages/sandbox/sandbox/lib/index.js')
    await tools.ctx.plugin(await importLib('packages/sandbox/network/lib/index.js'), {})
    const offPolicy = { mode: 'off', writableRoots: [], protectedPaths: [], network: 'on' }
    const confined = (network) => ({
      mode: 'workspace-write',
      writableRoots: [box.dir],
      // As the permission layer gives them: none of these exist, so each call puts stand-ins in place.
      protectedPaths: protectedProjectPaths(box.dir),
      network,
      ...(network === 'proxy' ? { proxyToken: tools.ctx.sandboxNetwork.grant({ sessionId: 'bench' }) } : {}),
    })
    // The bash tool asks ctx.permission for the policy when one is loaded.
    let policy = offPolicy
    tools.ctx.provide('permission', { sandboxPolicy: () => policy })
    await direct(box.dir)
    await tools.call('bash', { command: COMMAND }, box.dir)
    policy = confined('proxy')
    await tools.call('bash', { command: COMMAND }, box.dir)
    for (let i = 0; i < runs; i++) {
      spawnTimes.push(await direct(box.dir))
      policy = offPolicy
      unsandboxed.push(await timed(() => tools.call('bash', { command: COMMAND }, box.dir)))
      policy = confined('off')
      sandboxed.push(await timed(() => tools.call('bash', { command: COMMAND }, box.dir)))
      policy = confined('proxy')
      proxied.push(await timed(() => tools.call('bash', { command: COMMAND }, box.dir)))
    }
    const added = median(unsandboxed) - median(spawnTimes)
    const addedBwrap = median(sandboxed) - median(spawnTimes)
    const addedProxy = median(proxied) - median(spawnTimes)
    return {
      rows: [
        row('bash -c spawned directly, median', ms(median(spawnTimes))),
        row('bash tool, sandbox off, median', ms(median(unsandboxed))),
        row('added by the harness', ms(added), `< ${TARGET_MS} ms`, added < TARGET_MS),
        row('bash tool in bwrap (workspace-write), median', ms(median(sandboxed))),
        row('added by harness + sandbox', ms(addedBwrap)),
        row('bash tool in bwrap, network proxy, median', ms(median(proxied))),
        row('added by harness + sandbox + proxy namespace', ms(addedProxy)),
      ],
      note: `${runs} call(s) of \`${COMMAND}\` each way`,
    }
  } finally {
    await tools.dispose()
    await box.dispose()
  }
}
