import { type FSWatcher, watch } from 'node:fs'
import path from 'node:path'
import type {} from '@dsh/app-boot'
import { type Context, Schema } from '@dsh/cordis'
import { errorText } from '@dsh/loader'

export const name = 'hmr'
export const inject = ['profileContext', 'loader']

export interface HmrConfig {
  debounceMs: number
}

export const Config: Schema<HmrConfig> = Schema.object({
  debounceMs: Schema.natural()
    .default(100)
    .description('Quiet time after the last change before the tree is reconciled.'),
})

/**
 * Live reload of a profile's patch files: when the profile or home
 * `cordis.patch.yml` changes, the layers are composed again and the loader
 * reconciles the running tree (only changed rows restart). A bad edit is
 * reported and the running tree stays as it was.
 */
export function apply(ctx: Context, config: HmrConfig) {
  const profile = ctx.profileContext
  const loader = ctx.loader
  const say = (text: string) => process.stderr.write(`dsh: ${text}\n`)
  let timer: NodeJS.Timeout | undefined
  const changed = new Set<string>()

  const reload = async () => {
    const files = [...changed].join(', ')
    changed.clear()
    try {
      await loader.apply(await profile.recompose())
      say(`reloaded ${files}`)
    } catch (error) {
      say(`reload failed, keeping the running tree: ${errorText(error)}`)
    }
  }

  const byDir = new Map<string, Set<string>>()
  for (const file of profile.watchFiles) {
    const dir = path.dirname(file)
    if (!byDir.has(dir)) byDir.set(dir, new Set())
    byDir.get(dir)?.add(path.basename(file))
  }

  ctx.effect(() => {
    const watchers: FSWatcher[] = []
    for (const [dir, names] of byDir) {
      try {
        watchers.push(
          watch(dir, (_event, filename) => {
            if (!filename || !names.has(filename.toString())) return
            changed.add(path.join(dir, filename.toString()))
            clearTimeout(timer)
            timer = setTimeout(() => void reload(), config.debounceMs)
          }),
        )
      } catch (error) {
        say(`cannot watch ${dir} for patch changes: ${errorText(error)}`)
      }
    }
    return () => {
      clearTimeout(timer)
      for (const watcher of watchers) watcher.close()
    }
  }, 'watch patch files')
}
