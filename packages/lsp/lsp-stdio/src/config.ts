import { isAbsolute } from 'node:path'
import { Schema, stringList, stringValue } from '@dsh/cordis'

/** One local language server: how to start it and which files it answers for. */
export interface ServerConfig {
  /** A name looked up on PATH (absolute entries only) when first needed, or an absolute path. */
  command: string
  args: string[]
  /** Lowercase extension with its dot → LSP language id, e.g. `{ '.ts': 'typescript' }`. */
  extensions: Record<string, string>
  /** Files or folders that mark a project root; the nearest one at or below the workspace wins. */
  rootMarkers: string[]
  /** Sent as `initializationOptions` in `initialize`. */
  initializationOptions?: unknown
  /** The answer to every `workspace/configuration` item (null: the server's defaults). */
  configuration?: unknown
  /** Variables on top of the environment policy's. */
  env: Record<string, string>
  /** How a user gets the server, quoted when it is missing. */
  install: string
}

export interface LspStdioConfig {
  servers: Record<string, ServerConfig>
  requestTimeoutMs: number
  startTimeoutMs: number
  maxDocumentBytes: number
  diagnosticsSettleMs: number
  maxRestarts: number
  restartWindowMs: number
  restartBackoffMs: number
  maxRestartBackoffMs: number
  shutdownTimeoutMs: number
  maxStderrBytes: number
  maxMessageBytes: number
}

const server: Schema<ServerConfig> = Schema.object({
  command: Schema.string().min(1).required().description('The program: a name on PATH, or an absolute path.'),
  args: stringList('Its arguments (no shell).'),
  extensions: Schema.dict(Schema.string().min(1))
    .required()
    .description("Lowercase extension with its dot → LSP language id, e.g. { '.ts': 'typescript' }."),
  rootMarkers: Schema.array(Schema.string().min(1))
    .default([])
    .description('Names that mark a project root; the nearest one between the file and the workspace wins.'),
  initializationOptions: Schema.any().description('`initializationOptions` sent in `initialize`.'),
  configuration: Schema.any().description('The answer to every `workspace/configuration` item (absent: null).'),
  env: Schema.dict(Schema.string()).default({}).description('Variables on top of the environment policy.'),
  install: stringValue('How to install the server, quoted when it is missing.'),
})

const TYPESCRIPT_EXTENSIONS = {
  '.ts': 'typescript',
  '.tsx': 'typescriptreact',
  '.mts': 'typescript',
  '.cts': 'typescript',
  '.js': 'javascript',
  '.jsx': 'javascriptreact',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
}

/** Servers for the common languages; each is used only when its command is found. */
export const DEFAULT_SERVERS: Record<string, ServerConfig> = {
  typescript: {
    command: 'typescript-language-server',
    args: ['--stdio'],
    extensions: TYPESCRIPT_EXTENSIONS,
    rootMarkers: ['tsconfig.json', 'jsconfig.json', 'package.json'],
    // Without this, requests made while the project loads go to a syntax-only tsserver,
    // which cannot follow imports: definitions come back empty, hovers as `any`.
    initializationOptions: { tsserver: { useSyntaxServer: 'never' } },
    env: {},
    install: 'npm install -g typescript-language-server typescript',
  },
  python: {
    command: 'pyright-langserver',
    args: ['--stdio'],
    extensions: { '.py': 'python', '.pyi': 'python' },
    rootMarkers: ['pyrightconfig.json', 'pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt'],
    env: {},
    install: 'npm install -g pyright',
  },
  go: {
    command: 'gopls',
    args: [],
    extensions: { '.go': 'go' },
    rootMarkers: ['go.work', 'go.mod'],
    env: {},
    install: 'go install golang.org/x/tools/gopls@latest',
  },
  rust: {
    command: 'rust-analyzer',
    args: [],
    extensions: { '.rs': 'rust' },
    rootMarkers: ['Cargo.toml'],
    env: {},
    install: 'rustup component add rust-analyzer',
  },
  clangd: {
    command: 'clangd',
    args: [],
    extensions: {
      '.c': 'c',
      '.h': 'c',
      '.cc': 'cpp',
      '.cpp': 'cpp',
      '.cxx': 'cpp',
      '.hh': 'cpp',
      '.hpp': 'cpp',
      '.hxx': 'cpp',
    },
    rootMarkers: ['compile_commands.json', 'compile_flags.txt', '.clangd'],
    env: {},
    install: 'apt-get install clangd (or your platform’s LLVM package)',
  },
}

export const Config: Schema<LspStdioConfig> = Schema.object({
  servers: Schema.dict(server)
    .default(DEFAULT_SERVERS)
    .description(
      'Server id → server. A patch replaces the whole table: restate the defaults you keep. A server whose command is not found answers LSP_UNAVAILABLE naming it.',
    ),
  requestTimeoutMs: Schema.natural()
    .min(1)
    .default(20_000)
    .description('How long one request may take before it is cancelled, in milliseconds.'),
  startTimeoutMs: Schema.natural()
    .min(1)
    .default(60_000)
    .description('How long a server may take to answer `initialize`, in milliseconds.'),
  maxDocumentBytes: Schema.natural()
    .min(1)
    .default(4_000_000)
    .description('The largest file handed to a server, in bytes.'),
  diagnosticsSettleMs: Schema.natural()
    .default(250)
    .description(
      'After a server first reports on a changed file, how long to wait for it to report again (servers send syntax, then type errors), in milliseconds.',
    ),
  maxRestarts: Schema.natural()
    .default(5)
    .description('How many crashes within restartWindowMs a server survives before it is given up for the session.'),
  restartWindowMs: Schema.natural().min(1).default(300_000).description('The window maxRestarts counts in.'),
  restartBackoffMs: Schema.natural()
    .default(500)
    .description('The wait before the first restart, doubled for each further crash in the window, in milliseconds.'),
  maxRestartBackoffMs: Schema.natural().default(10_000).description('The longest wait before a restart.'),
  shutdownTimeoutMs: Schema.natural()
    .default(3_000)
    .description('How long a server may take to answer `shutdown` before it is killed, in milliseconds.'),
  maxStderrBytes: Schema.natural()
    .default(16_000)
    .description('How much of a server’s stderr is kept (the tail) to explain a crash.'),
  maxMessageBytes: Schema.natural()
    .min(1)
    .default(64_000_000)
    .description(
      'The largest message a server may send, in bytes; one that announces more is stopped as broken (its reader would hold it all).',
    ),
})

/** Load-time checks schemastery cannot express; the message names the server and the entry. */
export function checkServers(servers: Record<string, ServerConfig>): void {
  for (const [id, config] of Object.entries(servers)) {
    if (config.command.includes('/') && !isAbsolute(config.command)) {
      throw new Error(
        `lsp-stdio: servers.${id}.command "${config.command}" must be a name looked up on PATH or an absolute path`,
      )
    }
    for (const extension of Object.keys(config.extensions)) {
      if (!/^\.[a-z0-9_+-]+$/.test(extension)) {
        throw new Error(
          `lsp-stdio: servers.${id}.extensions has "${extension}"; an extension is lowercase and starts with a dot, e.g. ".ts"`,
        )
      }
    }
  }
}
