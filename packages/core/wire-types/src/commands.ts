/** A command the user can call as `/name args`, as a surface lists it (completion, ACP `available_commands_update`). */
export interface CommandInfo {
  name: string
  description: string
  /** What to type after the name, e.g. `<pull request number>`. */
  argumentHint?: string
  /** Where it comes from: `project`, `user`, `project:<subfolder>`, `skill`. */
  scope: string
}
