export {
  findSessionLogs,
  type LoggedEvent,
  parseSessionLog,
  readSessionLog,
  readSessionText,
  ReplayError,
  type SessionHeader,
  type SessionLog,
} from './log.ts'
export { modelCalls, repliesFromLog, type RepliesOptions } from './replies.ts'
export { normaliseLog, normaliseMachineFacts, type NormalisedLog, type NormaliseOptions } from './normalise.ts'
export { describeRequest, expectedRequests, type RequestSummary, type WireMessageSummary } from './requests.ts'
export {
  listScenarios,
  parseScenario,
  prepareRun,
  readScenario,
  recordedHome,
  SCENARIO_FILE,
  type Scenario,
  type ScenarioFolder,
  scenarioArgs,
  SESSION_FILE,
} from './scenario.ts'
