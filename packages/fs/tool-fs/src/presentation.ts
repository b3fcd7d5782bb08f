import { type CallArguments, callTarget, type FileChange, type ToolPresentation } from '@dsh/tools'

type Title = NonNullable<ToolPresentation['title']>

/** `Verb path` followed by what `detail` adds, or the bare verb when the call names no path. */
export function pathTitle(verb: string, detail: (args: CallArguments) => string = () => ''): Title {
  return (args, shown) => {
    const target = callTarget(args)
    return target ? `${verb} ${shown(target)}${detail(args)}` : verb
  }
}

/** What a search looks for, then ` in path` when the call names a folder or file to search. */
export function searchTitle(what: (args: CallArguments) => string): Title {
  return (args, shown) => {
    const target = callTarget(args)
    return `${what(args)}${target ? ` in ${shown(target)}` : ''}`.trim()
  }
}

/**
 * A call that changes the file it names: titled `Verb path`, shown as the diff of the texts `texts` reads from the
 * call's arguments (undefined when they are not both there).
 */
export function fileChange(
  verb: string,
  texts: (args: CallArguments) => Omit<FileChange, 'path'> | undefined,
): ToolPresentation {
  return {
    kind: 'edit',
    view: 'diff',
    title: pathTitle(verb),
    change: (args) => {
      const target = callTarget(args)
      const change = target ? texts(args) : undefined
      return target && change ? { path: target, ...change } : undefined
    },
  }
}
