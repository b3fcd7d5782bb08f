// Cold start of `dsh --profile headless --dump-config`: the launcher composes
// the profile's layers and prints the tree, without booting it.
import { afterWarmUp, rssRows, runDsh, sandbox, wallRows } from './common.mjs'

const WALL_TARGET_MS = 250
const RSS_TARGET_MIB = 80

export async function run({ runs, name }) {
  const box = await sandbox(name)
  try {
    const args = ['--profile', 'headless', '--dump-config']
    const samples = await afterWarmUp(runs, () => runDsh(args, { home: box.home, cwd: box.workspace }))
    return {
      rows: [
        ...wallRows(
          samples.map((s) => s.wallMs),
          WALL_TARGET_MS,
        ),
        ...rssRows(
          samples.map((s) => s.maxRssKiB),
          RSS_TARGET_MIB,
        ),
      ],
    }
  } finally {
    await box.dispose()
  }
}
