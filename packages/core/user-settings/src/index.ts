export {
  COMPATIBLE_ROUTE,
  checkedModel,
  choice,
  ModelsRequest,
  SettingsChange,
  SettingsConfig,
  SettingsFileError,
  type SettingsOptions,
  SettingsStore,
  THEMES,
  type Theme,
  type WebSettings,
} from './store.ts'
