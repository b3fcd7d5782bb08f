import type { ConnectionTest, DshApi, ModelDiscovery, Settings, SettingsUpdate } from '@dsh/web-client'
import { Store } from '../lib/store.ts'
import { applyTheme } from '../theme/theme.ts'

/** The server's settings; the theme is applied to the page whenever they load or change. */
export class SettingsStore extends Store<Settings | undefined> {
  constructor(private readonly api: DshApi) {
    super(undefined)
  }

  async load(): Promise<void> {
    const settings = await this.api.settings()
    this.set(settings)
    applyTheme(settings.theme)
  }

  async save(update: SettingsUpdate): Promise<Settings> {
    const settings = await this.api.saveSettings(update)
    this.set(settings)
    applyTheme(settings.theme)
    return settings
  }

  test(): Promise<ConnectionTest> {
    return this.api.testConnection()
  }

  discoverModels(route?: string): Promise<ModelDiscovery> {
    return this.api.discoverModels(route)
  }
}
