export * from './compose.ts'
export {
  Loader,
  type LoaderOptions,
  type ModuleResolver,
  type ModuleImporter,
  type Health,
  type RowProblem,
  errorText,
} from './loader.ts'
export { exportLogsToConsole, type LogLevel } from './console-exporter.ts'
