export interface CommandSpec {
  name: 'compact' | 'new' | 'model' | 'plan'
  args?: string
  description: string
}

export const COMMANDS: readonly CommandSpec[] = [
  { name: 'compact', description: 'Summarise earlier messages to free up context' },
  { name: 'new', description: 'Start a new session in this workspace' },
  { name: 'model', args: '<id>', description: "Switch this session's model" },
  { name: 'plan', args: '[on|off]', description: 'Turn plan mode on or off (the agent plans and changes no files)' },
]

export interface ParsedCommand {
  name: CommandSpec['name']
  arg: string
}

/** A built-in `/command` line; anything else goes to the server, which expands the workspace's own commands (prompt files, skills). */
export function parseCommand(text: string): ParsedCommand | undefined {
  const match = text.trim().match(/^\/(\S+)(?:\s+([\s\S]*))?$/)
  const spec = match && COMMANDS.find((c) => c.name === match[1])
  return spec ? { name: spec.name, arg: (match[2] ?? '').trim() } : undefined
}
