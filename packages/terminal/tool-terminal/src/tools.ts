import { resolve } from 'node:path'
import type { Context, JsonValue } from '@dsh/cordis'
import {
  describeExit,
  TerminalError,
  type TerminalId,
  type TerminalInfo,
  type TerminalOutput,
  type WaitResult,
} from '@dsh/terminals'
import {
  defineTool,
  oneLine,
  textArgument,
  type ToolDefinition,
  ToolError,
  type ToolOutput,
  type ToolRunContext,
} from '@dsh/tools'
import { z } from 'zod'
import type { TerminalToolsConfig } from './config.ts'

/** Where `sessionState` keeps, per terminal, the offset up to which the model has seen the output. */
const CURSORS = 'tool-terminal:cursors'

/** Matches any new character: "some output has arrived". */
const ANY_OUTPUT = /[\s\S]/

const terminalId = z.string().min(1).describe('The id terminal_create returned, e.g. "term-1a2b3c4d".')

/** The five terminal tools, bound to `ctx.terminals` and one configuration. */
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

  const create = defineTool({
    name: 'terminal_create',
    presentation: {
      kind: 'execute',
      view: 'terminal',
      title: (args) => {
        const command = textArgument(args, 'command')
        return command ? `Open a terminal running \`${oneLine(command)}\`` : 'Open a terminal'
      },
      command: (args) => textArgument(args, 'command'),
    },
    description:
      'Open a persistent terminal (a real PTY) and return its id with its first output. Without `command` it runs an interactive ' +
      'shell whose state (cwd, variables, running programs) lasts across terminal_send calls; with `command` it runs that command ' +
      'line. Use terminals for interactive programs (REPLs, prompts, servers, watchers); use bash for one-off commands. ' +
      'Terminals run outside the sandbox. Kill a terminal when you no longer need it.',
    parameters: z.object({
      command: z
        .string()
        .min(1)
        .optional()
        .describe('A command line to run instead of an interactive shell, e.g. "python3" or "npm run dev".'),
      cwd: z
        .string()
        .min(1)
        .optional()
        .describe('Working directory, absolute or relative to the workspace. Default: the workspace.'),
    }),
    timeoutMs: config.startupTimeoutMs + 60_000,
    access: (args) => ({ kind: 'execute', escalated: true, summary: args.command ?? 'an interactive shell' }),
    async execute(args, run): Promise<ToolOutput> {
      const cwd = resolve(run.cwd, args.cwd ?? '.')
      const id = await guard(() =>
        ctx.terminals.create({
          sessionId: run.sessionId,
          cwd,
          ...(args.command !== undefined ? { command: args.command } : {}),
        }),
      )
      let waited: WaitResult
      try {
        waited = await settle(id, 0, config.startupTimeoutMs, run.signal)
      } catch (error) {
        // The model never learns the id of a terminal whose creation was cancelled: do not leave it running.
        if (run.signal.aborted) await ctx.terminals.kill(id).catch(() => {})
        throw error
      }
      const output = unread(id, run, 0)
      const info = ctx.terminals.get(id)
      const header = `[terminal ${id} started: ${info?.command ?? args.command ?? 'shell'}${info ? ` (pid ${info.pid})` : ''} in ${cwd}]`
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
      title: (args) =>
        `Type into ${textArgument(args, 'terminal_id') ?? 'a terminal'}: ${oneLine(textArgument(args, 'input') ?? '(Enter)')}`,
      command: (args) => textArgument(args, 'input'),
    },
    description:
      'Type input into a terminal (Enter is pressed after it unless press_enter is false), then wait and return the output the ' +
      'terminal produced since you last saw it. With wait_for (a regular expression, multiline: ^ and $ match at line ends) it waits ' +
      `until new output matches; without, until the output has been quiet for ${idleMs}ms. Either way it stops at timeout_ms ` +
      `(default ${config.defaultTimeoutMs}) or when the program exits. Quiet output does not prove a command finished: prefer wait_for ` +
      'with the prompt or an expected line. The terminal echoes what you type, so anchor wait_for to a line of output (after ' +
      '`make; echo DONE`, wait for "^DONE$", not "DONE"). Send control keys as characters with press_enter false, e.g. "\\u0003" for ' +
      'Ctrl+C, "\\u0004" for Ctrl+D.',
    parameters: z.object({
      terminal_id: terminalId,
      input: z.string().describe('The text to type. May be empty (with press_enter, just Enter).'),
      press_enter: z.boolean().default(true).describe('Press Enter after the input. Default true.'),
      wait_for: z
        .string()
        .min(1)
        .optional()
        .describe('A regular expression to wait for in the new output, e.g. "\\\\$ $" or "^Done".'),
      timeout_ms: z
        .number()
        .int()
        .min(1)
        .max(config.maxTimeoutMs)
        .optional()
        .describe(`The longest wait in milliseconds. Default ${config.defaultTimeoutMs}.`),
    }),
    timeoutMs: config.maxTimeoutMs + 60_000,
    access: (args) => ({ kind: 'execute', escalated: true, summary: `${args.terminal_id}: ${args.input}` }),
    async execute(args, run): Promise<ToolOutput> {
      const info = owned(args.terminal_id, run)
      const id = info.id
      if (info.exited) {
        throw new ToolError(
          'TERMINAL_EXITED',
          `terminal ${id} has exited (${describeExit(info.exited)}) and takes no more input. terminal_read shows its last output, ` +
            'terminal_kill removes it; create a new terminal to go on.',
        )
      }
      let pattern: RegExp | undefined
      if (args.wait_for !== undefined) {
        try {
          pattern = new RegExp(args.wait_for, 'm')
        } catch (error) {
          throw new ToolError(
            'TERMINAL_INVALID_REGEX',
            `wait_for is not a valid regular expression (${error instanceof Error ? error.message : String(error)}). Nothing was sent.`,
          )
        }
      }
      const before = info.offset
      guardSync(() => ctx.terminals.write(id, args.press_enter ? `${args.input}\r` : args.input))
      const timeoutMs = args.timeout_ms ?? config.defaultTimeoutMs
      const waited = pattern
        ? await guard(() => ctx.terminals.waitFor(id, { pattern, since: before, timeoutMs, signal: run.signal }))
        : await settle(id, before, timeoutMs, run.signal)
      const output = unread(id, run)
      return result(
        id,
        output,
        `${render(output, maxOutputChars)}\n${status(output, waited, { idleMs, timeoutMs, pattern: args.wait_for })}`,
        waited,
      )
    },
  })

  const read = defineTool({
    name: 'terminal_read',
    presentation: {
      kind: 'read',
      view: 'terminal',
      title: (args) => `Read ${textArgument(args, 'terminal_id') ?? 'a terminal'}`,
    },
    description:
      'Return the output a terminal produced since you last saw it, and whether its program is still running. With wait_ms, first ' +
      `wait up to that long for new output to arrive and go quiet (${idleMs}ms without output).`,
    parameters: z.object({
      terminal_id: terminalId,
      wait_ms: z
        .number()
        .int()
        .min(0)
        .max(config.maxTimeoutMs)
        .optional()
        .describe('Wait up to this long for new output first. Default 0: read at once.'),
    }),
    readOnly: true,
    timeoutMs: config.maxTimeoutMs + 60_000,
    access: (args) => ({ kind: 'read', summary: `read terminal ${args.terminal_id}` }),
    async execute(args, run): Promise<ToolOutput> {
      const { id } = owned(args.terminal_id, run)
      const since = cursors(run).get(id) ?? 0
      const waited = args.wait_ms ? await settle(id, since, args.wait_ms, run.signal) : undefined
      const output = unread(id, run, since)
      return result(
        id,
        output,
        `${render(output, maxOutputChars)}\n${status(output, waited, { idleMs, timeoutMs: args.wait_ms ?? 0 })}`,
        waited,
      )
    },
  })

  const kill = defineTool({
    name: 'terminal_kill',
    presentation: {
      kind: 'execute',
      view: 'generic',
      title: (args) => `Close ${textArgument(args, 'terminal_id') ?? 'a terminal'}`,
    },
    description:
      'Close a terminal: stop its program and every process it started, and return the output you had not seen yet. Its id stops working.',
    parameters: z.object({ terminal_id: terminalId }),
    access: (args) => ({ kind: 'execute', summary: `kill terminal ${args.terminal_id}` }),
    async execute(args, run): Promise<ToolOutput> {
      const info = owned(args.terminal_id, run)
      const id = info.id
      const output = unread(id, run)
      await guard(() => ctx.terminals.kill(id))
      cursors(run).delete(id)
      const done = info.exited
        ? `[terminal ${id} removed; its program had already exited (${describeExit(info.exited)})]`
        : `[terminal ${id} killed; all its processes have stopped]`
      const shown = output.text === '' && output.dropped === 0 ? done : `${render(output, maxOutputChars)}\n${done}`
      return { content: shown, meta: { terminalId: id } }
    },
  })

  const list = defineTool({
    name: 'terminal_list',
    presentation: { kind: 'read', view: 'generic', title: () => 'List terminals' },
    description:
      "List this session's terminals: id, whether the program runs, the command, its directory, and how much output you have not seen.",
    parameters: z.object({}),
    readOnly: true,
    isConcurrencySafe: () => true,
    access: () => ({ kind: 'read', summary: 'list terminals' }),
    execute(_args, run): ToolOutput {
      const mine = ctx.terminals.list(run.sessionId)
      if (mine.length === 0) return { content: '(no terminals)' }
      const seen = cursors(run)
      const lines = mine.map((info) => {
        const state = info.exited ? `exited (${describeExit(info.exited)})` : 'running'
        const unseen = info.offset - (seen.get(info.id) ?? 0)
        return `${info.id}  ${state}  ${info.command}  (in ${info.cwd}; ${unseen > 0 ? `${unseen} bytes unread` : 'nothing unread'})`
      })
      return { content: lines.join('\n'), meta: mine.map((info) => info.id) }
    },
  })

  return [create, send, read, kill, list]
}

function cursors(run: ToolRunContext): Map<string, number> {
  let map = run.sessionState.get(CURSORS)
  if (!(map instanceof Map)) {
    map = new Map<string, number>()
    run.sessionState.set(CURSORS, map)
  }
  return map as Map<string, number>
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
  wait: { idleMs: number; timeoutMs: number; pattern?: string },
): string {
  if (output.exited) return `[the program has exited: ${describeExit(output.exited)}]`
  switch (waited?.reason) {
    case undefined:
    case 'exit':
      return '[the program is still running]'
    case 'pattern':
      return '[wait_for matched; the program is still running]'
    case 'idle':
      return `[no output for ${wait.idleMs}ms; the program is still running and may be waiting for input]`
    case 'timeout':
      if (wait.pattern !== undefined)
        return `[wait_for did not match within ${wait.timeoutMs}ms; the program is still running]`
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
      ? ' terminal_list shows them; terminal_kill frees one.'
      : error.code === 'NOT_FOUND'
        ? " terminal_list shows this session's terminals."
        : ''
  return new ToolError(`TERMINAL_${error.code}`, `${error.message}.${hint}`)
}
