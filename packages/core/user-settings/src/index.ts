export {
  COMPATIBLE_ROUTE,
  checkedModel,
  ModelsRequest,
  SettingsChange,
  SettingsFileError,
  type SettingsOptions,
  SettingsStore,
  THEMES,
  type Theme,
  type WebSettings,
} from './store.ts'
