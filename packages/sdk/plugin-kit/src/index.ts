// The public surface a plugin is written against, in one import. Importing it
// also brings the `ctx` keys of these services (`ctx.tools`, `ctx.llm`,
// `ctx.fs`, `ctx.sessions`, `ctx.systemPrompt`, `ctx.agents`) and their
// events into cordis' `Context` and `Events` types.

// cordis and schemastery (as `Schema`), as dsh runs them, with the registry helpers.
export * from '@dsh/cordis'

// zod, the version tool parameters are checked and described with.
export { z } from 'zod'

// Tools: define one, describe how it shows, fail it with a code.
export {
  type CallArguments,
  callTarget,
  defineTool,
  type FileChange,
  type ParameterSchema,
  type PreToolDecision,
  textArgument,
  type ToolAccess,
  type ToolCall,
  type ToolCallPresentation,
  type ToolDefinition,
  ToolError,
  type ToolErrorCode,
  type ToolExecution,
  type ToolKind,
  type ToolOutput,
  type ToolPresentation,
  type ToolResult,
  type ToolRunContext,
  type ToolRunOptions,
  ToolRuntime,
  type ToolView,
} from '@dsh/tools'

// Service definitions: the ctx keys plugins use and provide.
export { AgentRegistry } from '@dsh/agent'
export {
  type FileStat,
  FileSystem,
  FileSystemError,
  type FsAccessRequest,
  type FsCallOptions,
  type FsDecision,
  type ResolvedPath,
} from '@dsh/fs'
export { LlmRuntime } from '@dsh/llm'
export { Session, SessionStore } from '@dsh/session'
export { type PromptSection, type PromptTarget, SystemPrompt } from '@dsh/system-prompt'

// Event maps: the session log's typed events (extend `SessionEventMap` by declaration merging on '@dsh/session').
export type { AnySessionEvent, SessionEvent, SessionEventMap } from '@dsh/session'
export type { ContentBlock, Message } from '@dsh/wire-types'
