import { parseCmdline } from '@dsh/cmdline'
import type { Context } from '@dsh/cordis'
import { Command } from 'commander'

declare module '@dsh/cordis' {
  interface Context {
    headlessStartup: HeadlessStartup
  }
}

export interface HeadlessStartup {
  task: string
}

export const name = 'headless-startup'
export const inject = ['cmdlineArgs', 'appExit']

/** Parses `dsh --profile headless <task...>` and provides `headlessStartup`. */
export function apply(ctx: Context) {
  const program = new Command('dsh --profile headless')
    .description('Run one task in the current directory, print the answer and exit (0 when the task completed).')
    .argument('[task...]', 'the task; several words are joined with spaces')
  const startup = parseCmdline(ctx, program, ({ args }) => {
    const task = args.join(' ').trim()
    if (!task) program.error('error: a task is required, for example: dsh --profile headless "run the tests"')
    return { task }
  })
  if (startup) ctx.provide('headlessStartup', startup)
}
