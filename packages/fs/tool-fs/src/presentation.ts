import { type CallArguments, callTarget, type ToolPresentation } from '@dsh/tools'

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
