import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { isObject, readSessionLog, ReplayError, type SessionLog } from './log.ts'

/** `scenario.json`: how to run a recorded headless session again. */
export interface Scenario {
  /** The task: the one app argument of `dsh --profile headless`. */
  task: string
  /** Launcher arguments between `--profile headless` and the task, e.g. `["--patch", "retry.yml"]`; paths are relative to the workspace. */
  args?: string[]
  /** Files created in the workspace before the run: relative path → content. */
  files?: Record<string, string>
  /** The exit code of the run. */
  exitCode: number
  /** What the run printed on stdout, when it is checked. */
  stdout?: string
}

/** A scenario folder as read from disk. */
export interface ScenarioFolder {
  name: string
  dir: string
  scenario: Scenario
  /** The recorded log, `session.jsonl`. */
  log: SessionLog
}

export const SCENARIO_FILE = 'scenario.json'
export const SESSION_FILE = 'session.jsonl'

const isStringArray = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'string')

/** Checks the shape of a parsed `scenario.json`; `file` names it in the error. */
export function parseScenario(value: unknown, file = SCENARIO_FILE): Scenario {
  const problem = (what: string): never => {
    throw new ReplayError(`${file}: ${what}`)
  }
  if (!isObject(value)) return problem('not a JSON object')
  if (typeof value.task !== 'string' || value.task.trim() === '') problem('"task" must be a non-empty string')
  if (!Number.isInteger(value.exitCode)) problem('"exitCode" must be a whole number')
  if (value.args !== undefined && !isStringArray(value.args)) problem('"args" must be a list of strings')
  if (
    value.files !== undefined &&
    !(isObject(value.files) && Object.values(value.files).every((content) => typeof content === 'string'))
  ) {
    problem('"files" must map relative paths to text')
  }
  for (const name of Object.keys((value.files as Record<string, string> | undefined) ?? {})) {
    if (path.isAbsolute(name) || name.split(/[\\/]/).includes('..'))
      problem(`file "${name}" must stay inside the workspace`)
  }
  if (value.stdout !== undefined && typeof value.stdout !== 'string') problem('"stdout" must be a string')
  return value as unknown as Scenario
}

/** Reads `scenario.json` and `session.jsonl` of one scenario folder. */
export async function readScenario(dir: string): Promise<ScenarioFolder> {
  const file = path.join(dir, SCENARIO_FILE)
  let value: unknown
  try {
    value = JSON.parse(await readFile(file, 'utf8'))
  } catch (error) {
    throw new ReplayError(`${file}: ${(error as Error).message}`)
  }
  return {
    name: path.basename(dir),
    dir,
    scenario: parseScenario(value, file),
    log: await readSessionLog(path.join(dir, SESSION_FILE)),
  }
}

/** The folders under `root` that hold a `scenario.json`, sorted by name. */
export async function listScenarios(root: string): Promise<string[]> {
  const entries = await readdir(root, { withFileTypes: true })
  return entries
    .filter((entry) => entry.isDirectory() && existsSync(path.join(root, entry.name, SCENARIO_FILE)))
    .map((entry) => path.join(root, entry.name))
    .sort()
}

/** The `dsh` arguments that run a scenario. */
export function scenarioArgs(scenario: Scenario): string[] {
  return ['--profile', 'headless', ...(scenario.args ?? []), scenario.task]
}

/**
 * Lays out a run under `root` (an empty temp folder): `DSH_HOME` at
 * `<root>/home` and the workspace at `<root>/work`, with the scenario's files
 * written into it. Recording and replay use the same layout, so a recorded
 * log's home is `<dirname of its cwd>/home`.
 */
export async function prepareRun(root: string, scenario: Scenario): Promise<{ home: string; workspace: string }> {
  const home = path.join(root, 'home')
  const workspace = path.join(root, 'work')
  await mkdir(home, { recursive: true })
  await mkdir(workspace, { recursive: true })
  for (const [name, content] of Object.entries(scenario.files ?? {})) {
    const file = path.join(workspace, name)
    await mkdir(path.dirname(file), { recursive: true })
    await writeFile(file, content)
  }
  return { home, workspace }
}

/** The home a log was recorded with, by the layout of `prepareRun`. */
export function recordedHome(log: SessionLog): string {
  return path.join(path.dirname(log.header.cwd), 'home')
}
