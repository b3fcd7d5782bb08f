import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { type Context, type JsonValue, sharedMap } from '@dsh/cordis'
import {
  describeExit,
  TerminalError,
  type TerminalId,
  type TerminalInfo,
  type TerminalOutput,
  type WaitResult,
} from '@dsh/terminals'
import {
  type CallArguments,
  defineTool,
  errorMessage,
  oneLine,
  textArgument,
  type ToolDefinition,
  ToolError,
  type ToolOutput,
  type ToolRunContext,
  toolParameters,
  toolParametersBy,
} from '@dsh/tools'
import { z } from 'zod'
import { Config, type TerminalToolsConfig } from './config.ts'

/** Where `sessionState` keeps, per terminal, the offset up to which the model has seen the output. */
const CURSORS = 'tool-terminal:cursors'

/** Matches any new character: "some output has arrived". */
const ANY_OUTPUT = /[\s\S]/

const terminalId = z.string().min(1).describe('The id terminal_open returned, e.g. "term-1a2b3c4d".')

/** The one backend type this package opens: an interactive shell. */
const SHELL_TYPE = 'shell'

/** Where `sessionState` keeps the display names given to terminal_open. */
const NAMES = 'tool-terminal:names'

/** The signals terminal_signal delivers, as the seeds' catalog lists them. */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGTSTP', 'SIGHUP'] as const

const openParameters = toolParameters(
  z.object({
    type: z.string().min(1).describe(`The terminal backend: "${SHELL_TYPE}".`),
    name: z.string().min(1).max(80).optional().describe('A short name to tell your terminals apart, e.g. "server".'),
    cwd: z
      .string()
      .min(1)
      .optional()
      .describe('Working directory, absolute or relative to the workspace. Default: the workspace.'),
  }),
)

const sendParameters = toolParameters(
  z.object({
    sessionId: terminalId,
    text: z.string().describe('The text to type. May be empty (with submit, just Enter).'),
    submit: z.boolean().default(true).describe('Press Enter after the text. Default true.'),
    run_in_background: z
      .boolean()
      .optional()
      .describe('Return at once without waiting for output; read it later with terminal_read.'),
  }),
)

const closeParameters = toolParameters(z.object({ sessionId: terminalId }))

const signalParameters = toolParameters(
  z.object({
    sessionId: terminalId,
    signal: z.enum(SIGNALS).describe('The signal to send.'),
  }),
)

const listParameters = toolParameters(z.object({}))

/** terminal_read's parameters for the most lines a call may ask for and the default count. */
const readParameters = toolParametersBy((maxReadLines: number, readLines: number) =>
  z.object({
    sessionId: terminalId,
    offset: z.number().int().min(0).optional().describe('Lines to skip back from the newest. Default 0.'),
    count: z
      .number()
      .int()
      .min(1)
      .max(maxReadLines)
      .optional()
      .describe(`How many lines to return. Default ${readLines}.`),
  }),
)
const defaults = Config()
readParameters(defaults.maxReadLines, defaults.readLines)

/** The six terminal tools, bound to `ctx.terminals` and one configuration. */
export function terminalTools(ctx: Context, config: TerminalToolsConfig): ToolDefinition[] {
  const { idleMs, maxOutputChars } = config

  /** The caller's terminal, or a tool error saying why it cannot be used. */
  const owned = (id: string, run: ToolRunContext): TerminalInfo => {
    const info = ctx.terminals.get(id as TerminalId)
    if (!info) {
      throw new ToolError(
        'TERMINAL_NOT_FOUND',
        `there is no terminal "${id}": it was never created, has been killed, or was lost when dsh restarted. terminal_list shows this session's terminals.`,
      )
    }
    if (info.sessionId !== run.sessionId) {
      throw new ToolError(
        'TERMINAL_NOT_OWNED',
        `terminal "${id}" belongs to another session; use only terminals this session created (terminal_list shows them).`,
      )
    }
    return info
  }

  /** Waits until output after `since` has arrived and gone quiet, the process exits, or the time is up. */
  const settle = async (id: TerminalId, since: number, timeoutMs: number, signal: AbortSignal): Promise<WaitResult> => {
    const deadline = Date.now() + timeoutMs
    const first = await guard(() => ctx.terminals.waitFor(id, { pattern: ANY_OUTPUT, since, timeoutMs, signal }))
    if (first.reason !== 'pattern') return first
    return guard(() => ctx.terminals.waitFor(id, { idleMs, timeoutMs: Math.max(0, deadline - Date.now()), signal }))
  }

  /** Output the model has not seen yet; marks it seen. */
  const unread = (id: TerminalId, run: ToolRunContext, since = cursors(run).get(id) ?? 0): TerminalOutput => {
    const output = guardSync(() => ctx.terminals.read(id, { since }))
    cursors(run).set(id, output.offset)
    return output
  }

  const open = defineTool({
    name: 'terminal_open',
    presentation: {
      kind: 'execute',
      view: 'terminal',
      title: (args) => {
        const label = textArgument(args, 'name')
        return label ? `Open terminal "${oneLine(label)}"` : 'Open a terminal'
      },
    },
    description:
      'Open a persistent terminal (a real PTY running an interactive shell) and return its id with its first output. The ' +
      "shell's state (cwd, variables, running programs) lasts across terminal_send calls. Use terminals for interactive " +
      'programs (REPLs, prompts, servers, watchers); use bash for one-off commands. Terminals run outside the sandbox. ' +
      `Close a terminal when you no longer need it. The only type is "${SHELL_TYPE}".`,
    parameters: openParameters,
    timeoutMs: config.startupTimeoutMs + 60_000,
    access: (args) => ({
      kind: 'execute',
      escalated: true,
      summary: `open a terminal${args.name ? ` "${args.name}"` : ''}`,
    }),
    async execute(args, run): Promise<ToolOutput> {
      if (args.type !== SHELL_TYPE) {
        throw new ToolError(
          'TERMINAL_UNKNOWN_TYPE',
          `there is no terminal type "${args.type}"; the only type is "${SHELL_TYPE}" (an interactive shell).`,
        )
      }
      const cwd = resolve(run.cwd, args.cwd ?? '.')
      const id = await guard(() => ctx.terminals.create({ sessionId: run.sessionId, cwd }))
      if (args.name !== undefined) names(run).set(id, args.name)
      let waited: WaitResult
      try {
        waited = await settle(id, 0, config.startupTimeoutMs, run.signal)
      } catch (error) {
        // The model never learns the id of a terminal whose opening was cancelled: do not leave it running.
        if (run.signal.aborted) await ctx.terminals.kill(id).catch(() => {})
        throw error
      }
      const output = unread(id, run, 0)
      const info = ctx.terminals.get(id)
      const header = `[terminal ${id}${args.name ? ` "${args.name}"` : ''} started: ${info?.command ?? 'shell'}${info ? ` (pid ${info.pid})` : ''} in ${cwd}]`
      return result(
        id,
        output,
        `${header}\n${render(output, maxOutputChars)}\n${status(output, waited, { idleMs, timeoutMs: config.startupTimeoutMs })}`,
        waited,
      )
    },
  })

  const send = defineTool({
    name: 'terminal_send',
    presentation: {
      kind: 'execute',
      view: 'terminal',
      title: (args) => `Type into ${terminalOf(args)}: ${oneLine(textArgument(args, 'text') ?? '(Enter)')}`,
      command: (args) => textArgument(args, 'text'),
    },
    description:
      'Type text into a terminal (Enter is pressed after it unless submit is false), then wait until the output has been ' +
      `quiet for ${idleMs}ms, the program exits, or ${config.defaultTimeoutMs}ms pass, and return the output the terminal ` +
      'produced since you last saw it. Quiet output does not prove a command finished: read again with terminal_read. ' +
      'Send control keys as characters with submit false, e.g. "\\u0003" for Ctrl+C, "\\u0004" for Ctrl+D.',
    parameters: sendParameters,
    timeoutMs: config.defaultTimeoutMs + 60_000,
    access: (args) => ({ kind: 'execute', escalated: true, summary: `${args.sessionId}: ${args.text}` }),
    async execute(args, run): Promise<ToolOutput> {
      const info = owned(args.sessionId, run)
      const id = info.id
      if (info.exited) {
        throw new ToolError(
          'TERMINAL_EXITED',
          `terminal ${id} has exited (${describeExit(info.exited)}) and takes no more input. terminal_read shows its last output, ` +
            'terminal_close removes it; open a new terminal to go on.',
        )
      }
      const before = info.offset
      guardSync(() => ctx.terminals.write(id, args.submit ? `${args.text}\r` : args.text))
      if (args.run_in_background) {
        return {
          content: `[sent to terminal ${id}; its output keeps arriving: read it with terminal_read]`,
          meta: { terminalId: id },
        }
      }
      const timeoutMs = config.defaultTimeoutMs
      const waited = await settle(id, before, timeoutMs, run.signal)
      const output = unread(id, run)
      return result(
        id,
        output,
        `${render(output, maxOutputChars)}\n${status(output, waited, { idleMs, timeoutMs })}`,
        waited,
      )
    },
  })

  const read = defineTool({
    name: 'terminal_read',
    presentation: { kind: 'read', view: 'terminal', title: (args) => `Read ${terminalOf(args)}` },
    description:
      'Return a page of the output a terminal still holds, without typing anything, and whether its program runs. ' +
      `By default the newest ${config.readLines} lines; offset counts lines back from the newest, count sets the page size.`,
    parameters: readParameters(config.maxReadLines, config.readLines),
    readOnly: true,
    access: (args) => ({ kind: 'read', summary: `read terminal ${args.sessionId}` }),
    execute(args, run): ToolOutput {
      const { id } = owned(args.sessionId, run)
      const output = unread(id, run, 0)
      const lines = output.text.replace(/\n$/, '').split('\n')
      const skip = args.offset ?? 0
      const count = args.count ?? config.readLines
      const end = Math.max(0, lines.length - skip)
      const start = Math.max(0, end - count)
      const page = { ...output, text: lines.slice(start, end).join('\n') }
      const where = start > 0 || end < lines.length ? `[lines ${start + 1}-${end} of ${lines.length} held]\n` : ''
      return result(
        id,
        output,
        `${where}${render(page, maxOutputChars)}\n${status(output, undefined, { idleMs, timeoutMs: 0 })}`,
        undefined,
      )
    },
  })

  const close = defineTool({
    name: 'terminal_close',
    presentation: { kind: 'execute', view: 'generic', title: (args) => `Close ${terminalOf(args)}` },
    description:
      'Close a terminal: stop its program and every process it started, and return the output you had not seen yet. Its id stops working.',
    parameters: closeParameters,
    access: (args) => ({ kind: 'execute', summary: `close terminal ${args.sessionId}` }),
    async execute(args, run): Promise<ToolOutput> {
      const info = owned(args.sessionId, run)
      const id = info.id
      const output = unread(id, run)
      await guard(() => ctx.terminals.kill(id))
      cursors(run).delete(id)
      names(run).delete(id)
      const done = info.exited
        ? `[terminal ${id} removed; its program had already exited (${describeExit(info.exited)})]`
        : `[terminal ${id} closed; all its processes have stopped]`
      const shown = output.text === '' && output.dropped === 0 ? done : `${render(output, maxOutputChars)}\n${done}`
      return { content: shown, meta: { terminalId: id } }
    },
  })

  const signal = defineTool({
    name: 'terminal_signal',
    presentation: {
      kind: 'execute',
      view: 'generic',
      title: (args) => `Send ${textArgument(args, 'signal') ?? 'a signal'} to ${terminalOf(args)}`,
    },
    description:
      "Send a signal to the program running in the foreground of a terminal (the shell's current job). SIGKILL is refused " +
      'when only the shell itself runs: close the terminal instead.',
    parameters: signalParameters,
    access: (args) => ({ kind: 'execute', escalated: true, summary: `${args.signal} to terminal ${args.sessionId}` }),
    async execute(args, run): Promise<ToolOutput> {
      const info = owned(args.sessionId, run)
      if (info.exited)
        throw new ToolError('TERMINAL_EXITED', `terminal ${info.id} has exited (${describeExit(info.exited)}).`)
      const group = await foregroundGroup(info.pid)
      if (args.signal === 'SIGKILL' && group === info.pid) {
        throw new ToolError(
          'TERMINAL_SIGNAL_REFUSED',
          `only the shell of terminal ${info.id} is running; SIGKILL would end the terminal. Use terminal_close.`,
        )
      }
      try {
        process.kill(-group, args.signal)
      } catch (error) {
        throw new ToolError('TERMINAL_SIGNAL_FAILED', `could not send ${args.signal}: ${errorMessage(error)}`)
      }
      const waited = await settle(info.id, info.offset, Math.min(config.defaultTimeoutMs, idleMs * 5), run.signal)
      const output = unread(info.id, run)
      return result(
        info.id,
        output,
        `[sent ${args.signal} to process group ${group}]\n${render(output, maxOutputChars)}\n${status(output, waited, { idleMs, timeoutMs: idleMs * 5 })}`,
        waited,
      )
    },
  })

  const list = defineTool({
    name: 'terminal_list',
    presentation: { kind: 'read', view: 'generic', title: () => 'List terminals' },
    description:
      "List this session's terminals: id, whether the program runs, the command, its directory, and how much output you have not seen.",
    parameters: listParameters,
    readOnly: true,
    isConcurrencySafe: () => true,
    access: () => ({ kind: 'read', summary: 'list terminals' }),
    execute(_args, run): ToolOutput {
      const mine = ctx.terminals.list(run.sessionId)
      if (mine.length === 0) return { content: '(no terminals)' }
      const seen = cursors(run)
      const given = names(run)
      const lines = mine.map((info) => {
        const state = info.exited ? `exited (${describeExit(info.exited)})` : 'running'
        const unseen = info.offset - (seen.get(info.id) ?? 0)
        const label = given.has(info.id) ? ` "${given.get(info.id)}"` : ''
        return `${info.id}${label}  ${state}  ${info.command}  (in ${info.cwd}; ${unseen > 0 ? `${unseen} bytes unread` : 'nothing unread'})`
      })
      return { content: lines.join('\n'), meta: mine.map((info) => info.id) }
    },
  })

  return [open, send, read, close, signal, list]
}

/** The terminal a call names, for its title. */
function terminalOf(args: CallArguments): string {
  return textArgument(args, 'sessionId') ?? 'a terminal'
}

function names(run: ToolRunContext): Map<string, string> {
  return sharedMap(run.sessionState, NAMES)
}

/** The process group in the foreground of the terminal whose shell is `pid`: field 8 (tpgid) of /proc/<pid>/stat. */
async function foregroundGroup(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  // The command name (field 2) may hold spaces and parentheses; the fields after it start past the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const group = Number(fields[5])
  return Number.isInteger(group) && group > 0 ? group : pid
}

function cursors(run: ToolRunContext): Map<string, number> {
  return sharedMap(run.sessionState, CURSORS)
}

/** The output for the model: a note on bytes lost to the buffer, the newest `maxChars` characters. */
function render(output: TerminalOutput, maxChars: number): string {
  const lines: string[] = []
  if (output.dropped > 0)
    lines.push(
      `[${output.dropped} bytes of earlier output were lost: the terminal's buffer overflowed before they were read]`,
    )
  let text = output.text
  if (text.length > maxChars) {
    const cut = text.length - maxChars
    text = text.slice(cut)
    lines.push(`[${cut} earlier characters are left out; showing the last ${maxChars}]`)
  }
  lines.push(text === '' ? '(no new output)' : text.replace(/\n$/, ''))
  return lines.join('\n')
}

/** One line on where the program stands and why the wait ended. */
function status(
  output: TerminalOutput,
  waited: WaitResult | undefined,
  wait: { idleMs: number; timeoutMs: number },
): string {
  if (output.exited) return `[the program has exited: ${describeExit(output.exited)}]`
  switch (waited?.reason) {
    case undefined:
    case 'exit':
      return '[the program is still running]'
    case 'pattern':
    case 'idle':
      return `[no output for ${wait.idleMs}ms; the program is still running and may be waiting for input]`
    case 'timeout':
      if (output.text === '') return `[no output within ${wait.timeoutMs}ms; the program is still running]`
      return `[the output did not settle within ${wait.timeoutMs}ms; the program is still running. Read the rest with terminal_read]`
  }
}

function result(id: TerminalId, output: TerminalOutput, content: string, waited: WaitResult | undefined): ToolOutput {
  const meta: { [key: string]: JsonValue } = { terminalId: id, offset: output.offset, droppedBytes: output.dropped }
  if (waited) meta.waitEnded = waited.reason
  if (output.exited) meta.exited = { code: output.exited.code, signal: output.exited.signal }
  return { content, meta }
}

/** Runs a `ctx.terminals` call; its `TerminalError`s become tool errors with a `TERMINAL_*` code. */
async function guard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw toToolError(error)
  }
}

function guardSync<T>(run: () => T): T {
  try {
    return run()
  } catch (error) {
    throw toToolError(error)
  }
}

function toToolError(error: unknown): unknown {
  if (!(error instanceof TerminalError)) return error
  const hint =
    error.code === 'LIMIT'
      ? ' terminal_list shows them; terminal_close frees one.'
      : error.code === 'NOT_FOUND'
        ? " terminal_list shows this session's terminals."
        : ''
  return new ToolError(`TERMINAL_${error.code}`, `${error.message}.${hint}`)
}
