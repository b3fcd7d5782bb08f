import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type * as acp from '@agentclientprotocol/sdk'
import { reply } from '@dsh/llm-mock'
import { describe, expect, it } from 'vitest'
import { AcpTestClient } from './support/acp.ts'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'
import { onlyStoredSession, readSessionLog } from './support/session-log.ts'

const t = useMockedHeadless()

/** Where the dev dependencies put typescript-language-server and pyright-langserver. */
const SERVERS_BIN = fileURLToPath(new URL('../../../packages/lsp/lsp-stdio/node_modules/.bin', import.meta.url))
const withServers = { PATH: `${SERVERS_BIN}${path.delimiter}${process.env.PATH}` }

/** The file tools' path argument: the one place to change if it is renamed. */
const fileArg = (file: string) => ({ file_path: file })
const read = (file: string) => ({ name: 'read', arguments: fileArg(file) })
const edit = (file: string, oldString: string, newString: string) => ({
  name: 'edit',
  arguments: { ...fileArg(file), old_string: oldString, new_string: newString },
})
const write = (file: string, content: string) => ({ name: 'write', arguments: { ...fileArg(file), content } })
const bash = (command: string) => ({ name: 'bash', arguments: { description: 'Run a command', command } })
const lsp = (operation: string, file: string, line: number, character: number) => ({
  name: 'lsp',
  arguments: { operation, file_path: file, line, character },
})

function files(root: string, tree: Record<string, string>): void {
  for (const [name, text] of Object.entries(tree)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true })
    writeFileSync(path.join(root, name), text)
  }
}

/** The 1-based line and character of the `nth` occurrence of `needle` in a file, as a model would give them. */
function at(file: string, needle: string, nth = 1): [number, number] {
  const lines = readFileSync(path.join(t.work, file), 'utf8').split('\n')
  let seen = 0
  for (const [index, line] of lines.entries()) {
    for (let column = line.indexOf(needle); column >= 0; column = line.indexOf(needle, column + 1)) {
      if (++seen === nth) return [index + 1, column + 1]
    }
  }
  throw new Error(`${needle} is not in ${file}`)
}

/** Slow machines: the servers get time to start, and results wait for them. */
function patchHome(extra = ''): void {
  mkdirSync(t.home, { recursive: true })
  writeFileSync(path.join(t.home, 'cordis.patch.yml'), `- id: lsp-diagnostics\n  config:\n    waitMs: 90000\n${extra}`)
}

/** Every tool result the run produced, in order: the last request carries them all. */
const results = () => toolTexts(t.mock.requests.at(-1))

/**
 * Writes `project` into the workspace, then runs a headless task whose model makes each navigation call in turn
 * (operation, file, the text to point at and which occurrence of it) and then answers.
 */
async function navigate(project: Record<string, string>, steps: [string, string, string, number?][]) {
  files(t.work, project)
  patchHome()
  const calls = steps.map(([operation, file, needle, nth]) =>
    reply.toolCalls([lsp(operation, file, ...at(file, needle, nth))]),
  )
  t.mock.enqueue(...calls, reply.text('Navigated.'))
  return t.headless(['find your way around'], withServers)
}

const TS_PROJECT = {
  'tsconfig.json': JSON.stringify({
    compilerOptions: { strict: true, target: 'ES2022', module: 'ESNext', moduleResolution: 'Bundler', noEmit: true },
    include: ['src'],
  }),
  'src/shape.ts': [
    'export interface Shape {',
    '  area(): number',
    '}',
    '',
    'export class Square implements Shape {',
    '  constructor(private readonly side: number) {}',
    '  area(): number {',
    '    return this.side * this.side',
    '  }',
    '}',
    '',
  ].join('\n'),
  'src/main.ts': [
    "import { type Shape, Square } from './shape'",
    '',
    '/** Adds up the areas. */',
    'export function total(shapes: Shape[]): number {',
    '  return shapes.reduce((sum, shape) => sum + shape.area(), 0)',
    '}',
    '',
    'export const answer: number = total([new Square(2)])',
    '',
  ].join('\n'),
}

const PY_PROJECT = {
  'pyproject.toml': '[project]\nname = "shapes"\nversion = "0.1.0"\n',
  'shapes.py': [
    'class Shape:',
    '    def area(self) -> float:',
    '        raise NotImplementedError',
    '',
    '',
    'class Square(Shape):',
    '    def __init__(self, side: float) -> None:',
    '        self.side = side',
    '',
    '    def area(self) -> float:',
    '        return self.side * self.side',
    '',
  ].join('\n'),
  'main.py': [
    'from shapes import Shape, Square',
    '',
    '',
    'def total(shapes: list[Shape]) -> float:',
    '    """Adds up the areas."""',
    '    return sum(shape.area() for shape in shapes)',
    '',
    '',
    'answer: float = total([Square(2)])',
    '',
  ].join('\n'),
}

describe('the lsp tool and diagnostics through headless', () => {
  it('navigates a TypeScript project: definition, references with the declaration, implementation, hover', async () => {
    const run = await navigate(TS_PROJECT, [
      ['goToDefinition', 'src/main.ts', 'area()'],
      ['findReferences', 'src/shape.ts', 'area'],
      ['goToImplementation', 'src/shape.ts', 'Shape'],
      ['hover', 'src/main.ts', 'total', 2],
    ])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const [definition, references, implementation, hover] = results()
    expect(definition).toBe('1 definition of the symbol at src/main.ts:5:52:\nsrc/shape.ts:2:3: area(): number')
    // The declaration in the interface and the call through it.
    expect(references).toContain('src/shape.ts:2:3: area(): number')
    expect(references).toContain('src/main.ts:5:52: return shapes.reduce((sum, shape) => sum + shape.area(), 0)')
    expect(references).toMatch(/^3 references of the symbol at src\/shape\.ts:2:3:/)
    expect(implementation).toContain('src/shape.ts:5:14: export class Square implements Shape {')
    expect(hover).toContain('function total(shapes: Shape[]): number')
    expect(hover).toContain('Adds up the areas.')
  })

  it('navigates a Python project; pyright has no implementation, which the result says', async () => {
    const run = await navigate(PY_PROJECT, [
      ['goToDefinition', 'main.py', 'Square(2)'],
      ['findReferences', 'shapes.py', 'Square'],
      ['goToImplementation', 'shapes.py', 'Shape'],
      ['hover', 'main.py', 'total', 2],
    ])
    expect(run.code).toBe(0)
    const [definition, references, implementation, hover] = results()
    expect(definition).toContain('shapes.py:6:7: class Square(Shape):')
    expect(references).toContain('shapes.py:6:7: class Square(Shape):')
    expect(references).toContain('main.py:1:27: from shapes import Shape, Square')
    expect(references).toContain('main.py:9:24: answer: float = total([Square(2)])')
    expect(implementation).toMatch(/^Error: the python language server does not support goToImplementation/)
    expect(hover).toContain('def total(shapes: list[Shape]) -> float')
    expect(hover).toContain('Adds up the areas.')
  })

  it('appends a type error an edit introduces to its result, and clears it when a fix lands', async () => {
    files(t.work, TS_PROJECT)
    patchHome()
    t.mock.enqueue(
      reply.toolCalls([read('src/main.ts')]),
      reply.toolCalls([edit('src/main.ts', 'answer: number', 'answer: string')]),
      reply.toolCalls([edit('src/main.ts', 'answer: string', 'answer: number')]),
      reply.toolCalls([write('notes.md', 'no server reads this\n')]),
      reply.text('Fixed.'),
    )
    const run = await t.headless(['-v', 'break it, then fix it'], withServers)
    expect(run.code).toBe(0)
    const [, broken, fixed, notes] = results()
    expect(broken).toContain('Language server diagnostics after this change (1 error):')
    expect(broken).toMatch(/src\/main\.ts:8:14 error TS2322: Type 'number' is not assignable to type 'string'\./)
    expect(fixed).not.toContain('TS2322')
    expect(notes).not.toContain('diagnostics')
    // The log shows what the server said: one error, then a checked file without any.
    const { events } = await readSessionLog(t.home, onlyStoredSession(t.home))
    const metas = events.filter((event) => event.type === 'tool/result').map((event) => event.data.meta)
    expect(metas[1].diagnostics).toEqual([
      expect.objectContaining({ path: path.join(t.work, 'src/main.ts'), line: 8, character: 14, code: '2322' }),
    ])
    expect(metas[2].diagnostics).toEqual([])
    expect(metas[3].diagnostics).toBeUndefined()
    // headless -v counts them on the call's line.
    expect(run.stderr).toContain('→ Edit src/main.ts\n  ⚠ edit: 1 error reported by the language server\n→ Edit')
  })

  it('reports a Python type error after an edit', async () => {
    files(t.work, PY_PROJECT)
    patchHome()
    t.mock.enqueue(
      reply.toolCalls([read('main.py')]),
      reply.toolCalls([edit('main.py', 'answer: float', 'answer: str')]),
      reply.text('Broke it.'),
    )
    const run = await t.headless(['break it'], withServers)
    expect(run.code).toBe(0)
    expect(results()[1]).toMatch(
      /main\.py:9:15 error reportAssignmentType: Type "float" is not assignable to declared type "str"/,
    )
  })

  it('sends the diagnostics in the ACP tool call content, under the diff', async () => {
    files(t.work, TS_PROJECT)
    patchHome()
    t.mock.enqueue(
      reply.toolCalls([{ id: 'call_read', ...read('src/main.ts') }]),
      reply.toolCalls([{ id: 'call_edit', ...edit('src/main.ts', 'answer: number', 'answer: string') }]),
      reply.text('Broke it.'),
    )
    const client = new AcpTestClient({ home: t.home, cwd: t.work, env: { ...t.env(), ...withServers } })
    try {
      await client.initialize()
      const session = await client.newSession()
      expect((await client.prompt(session.sessionId, 'break it')).stopReason).toBe('end_turn')
      const updates = client.updatesOf(session.sessionId) as acp.ToolCallUpdate[]
      const done = updates.filter((u) => u.toolCallId === 'call_edit').at(-1)
      expect(done?.status).toBe('completed')
      const file = path.join(t.work, 'src/main.ts')
      expect(done?.content).toEqual([
        { type: 'diff', path: file, oldText: 'answer: number', newText: 'answer: string' },
        {
          type: 'content',
          content: {
            type: 'text',
            text: "Language server: 1 error\nsrc/main.ts:8:14 error TS2322: Type 'number' is not assignable to type 'string'.",
          },
        },
      ])
    } finally {
      expect((await client.close()).code).toBe(0)
    }
  })

  it('restarts a server that was killed, and says so', async () => {
    files(t.work, TS_PROJECT)
    patchHome()
    const hover = lsp('hover', 'src/main.ts', ...at('src/main.ts', 'total', 2))
    t.mock.enqueue(
      reply.toolCalls([hover]),
      async () => {
        const pids = serverPids('typescript-language-server', t.work)
        expect(pids).toHaveLength(1)
        process.kill(pids[0] as number, 'SIGKILL')
        return reply.toolCalls([hover])
      },
      reply.text('Hovered twice.'),
    )
    const run = await t.headless(['hover twice'], withServers)
    expect(run.code).toBe(0)
    const [first, second] = results()
    expect(first).toContain('function total(shapes: Shape[]): number')
    expect(second).toContain('function total(shapes: Shape[]): number')
    expect(second).toMatch(/\[note: the typescript language server had stopped \(.+\) and was restarted\]/)
  })

  it('answers LSP_UNAVAILABLE naming the command tried when the server is not installed', async () => {
    files(t.work, TS_PROJECT)
    patchHome()
    t.mock.enqueue(
      reply.toolCalls([lsp('hover', 'src/main.ts', 1, 1)]),
      reply.toolCalls([read('src/main.ts')]),
      reply.toolCalls([edit('src/main.ts', 'answer: number', 'answer: string')]),
      reply.text('No server.'),
    )
    const run = await t.headless(['hover'], { PATH: '/usr/bin:/bin' })
    expect(run.code).toBe(0)
    const [hover, , edited] = results()
    expect(hover).toContain(
      'Error: the typescript language server is not installed: `typescript-language-server --stdio` was tried',
    )
    expect(hover).toContain('npm install -g typescript-language-server typescript')
    const { events } = await readSessionLog(t.home, onlyStoredSession(t.home))
    expect(events.find((event) => event.type === 'tool/result')?.data.error.code).toBe('LSP_UNAVAILABLE')
    // The edit goes through untouched.
    expect(edited).toMatch(/^Edited src\/main\.ts/)
    expect(edited).not.toContain('diagnostics')
  })

  it('gives clear results for a position past the end, a file outside the workspace, or of no language', async () => {
    files(t.work, TS_PROJECT)
    files(t.root, { 'elsewhere/other.ts': 'export const x = 1\n' })
    files(t.work, { 'notes.txt': 'plain text\n' })
    patchHome()
    t.mock.enqueue(
      reply.toolCalls([
        lsp('hover', 'src/main.ts', 99, 1),
        lsp('hover', 'src/main.ts', 1, 500),
        lsp('hover', '../elsewhere/other.ts', 1, 1),
        lsp('hover', 'notes.txt', 1, 1),
        lsp('hover', 'src/missing.ts', 1, 1),
      ]),
      reply.text('Done.'),
    )
    const run = await t.headless(['poke around'], withServers)
    expect(run.code).toBe(0)
    const [pastEnd, pastLine, outside, text, missing] = results()
    expect(pastEnd).toBe('Error: line 99 is past the end of src/main.ts, which has 9 lines.')
    expect(pastLine).toMatch(
      /^Error: character 500 is past the end of line 1 of src\/main\.ts, which has 44 characters/,
    )
    expect(outside).toMatch(/outside the workspace/)
    expect(text).toMatch(/^Error: no language server is configured for \.txt files; servers are configured for .*\.ts/)
    expect(missing).toMatch(/src\/missing\.ts/)
    expect(missing).toMatch(/^Error: /)
  })

  it('confines the server: a hostile repo’s tsserver cannot write outside the workspace nor read dsh’s credentials', async () => {
    files(t.work, TS_PROJECT)
    mkdirSync(t.home, { recursive: true })
    writeFileSync(path.join(t.home, '.credentials.yaml'), 'DEEPSEEK_API_KEY: sk-hostile-repo-wants-this\n', {
      mode: 0o600,
    })
    // Outside /tmp (the sandbox's /tmp is a private tmpfs, so a write there would vanish anyway), and dsh's home.
    const outside = path.join('/var/tmp', `dsh-lsp-escape-${process.pid}-${Date.now()}.txt`)
    const planted = path.join(t.home, 'planted.txt')
    const attempt = (key: string, code: string) =>
      `try { ${code}; evidence.${key} = 'done' } catch (e) { evidence.${key} = e.code }`
    // typescript-language-server prefers the workspace's own TypeScript: the repo decides what runs.
    files(t.work, {
      'node_modules/typescript/package.json': JSON.stringify({ name: 'typescript', version: '5.9.3' }),
      'node_modules/typescript/lib/tsserver.js': [
        "const fs = require('node:fs')",
        'const evidence = {}',
        attempt('outside', `fs.writeFileSync(${JSON.stringify(outside)}, 'out')`),
        attempt('home', `fs.writeFileSync(${JSON.stringify(planted)}, 'in')`),
        attempt(
          'secret',
          `evidence.text = fs.readFileSync(${JSON.stringify(path.join(t.home, '.credentials.yaml'))}, 'utf8')`,
        ),
        "fs.writeFileSync('evidence.json', JSON.stringify(evidence))",
        'process.exit(1)',
      ].join('\n'),
    })
    patchHome('- id: lsp-stdio\n  config:\n    requestTimeoutMs: 5000\n    startTimeoutMs: 20000\n')
    t.mock.enqueue(reply.toolCalls([lsp('hover', 'src/main.ts', 4, 17)]), reply.text('Done.'))
    const run = await t.headless(['hover'], withServers)
    expect(run.code).toBe(0)
    const evidence = JSON.parse(readFileSync(path.join(t.work, 'evidence.json'), 'utf8'))
    expect(evidence).toEqual({ outside: 'EROFS', home: 'EROFS', secret: 'ENOENT' })
    expect(existsSync(outside)).toBe(false)
    expect(existsSync(planted)).toBe(false)
    expect(results()[0]).toMatch(/^Error: /)
  })
})

/** Runs git in `dir` with none of the machine's config, failing the test when git fails. */
function git(dir: string, ...args: string[]): void {
  const done = spawnSync('git', args, {
    cwd: dir,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_COUNT: '0',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@localhost',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@localhost',
    },
  })
  if (done.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${done.stderr}`)
}

/** The TypeScript fixture, committed to a fresh repository in the workspace. */
function committedProject(): void {
  files(t.work, TS_PROJECT)
  git(t.work, 'init', '--quiet', '--initial-branch=trunk')
  git(t.work, 'add', '.')
  git(t.work, 'commit', '--quiet', '-m', 'fixture')
}

const breakIt = "sed -i 's/answer: number/answer: string/' src/main.ts"
const TS2322 = /src\/main\.ts:8:14 error TS2322: Type 'number' is not assignable to type 'string'\./

describe('diagnostics after commands (afterCommands)', () => {
  it('appends the type error a bash sed introduces, and nothing after a command that changed no such file', async () => {
    committedProject()
    patchHome('    afterCommands: true\n')
    t.mock.enqueue(
      reply.toolCalls([bash(breakIt)]),
      reply.toolCalls([bash('echo touched > notes.md')]),
      reply.text('Broke it.'),
    )
    const run = await t.headless(['break it with sed'], withServers)
    expect(run.code).toBe(0)
    const [broken, notes] = results()
    expect(broken).toContain('Language server diagnostics after this change (1 error):')
    expect(broken).toMatch(TS2322)
    expect(notes).not.toContain('diagnostics')
    const { events } = await readSessionLog(t.home, onlyStoredSession(t.home))
    const metas = events.filter((event) => event.type === 'tool/result').map((event) => event.data.meta)
    expect(metas[0].diagnostics).toEqual([
      expect.objectContaining({ path: path.join(t.work, 'src/main.ts'), line: 8, code: '2322' }),
    ])
    expect(metas[1]?.diagnostics).toBeUndefined()
  })

  it('adds nothing to a command’s result when the switch is off (the default)', async () => {
    committedProject()
    patchHome()
    t.mock.enqueue(reply.toolCalls([bash(breakIt)]), reply.text('Broke it.'))
    const run = await t.headless(['break it with sed'], withServers)
    expect(run.code).toBe(0)
    expect(readFileSync(path.join(t.work, 'src/main.ts'), 'utf8')).toContain('answer: string')
    expect(results()[0]).not.toContain('diagnostics')
    const { events } = await readSessionLog(t.home, onlyStoredSession(t.home))
    expect(events.find((event) => event.type === 'tool/result')?.data.meta?.diagnostics).toBeUndefined()
    expect(serverPids('typescript-language-server', t.work)).toEqual([])
  })

  it("runs none of a hostile repository's fsmonitor, filter or hook commands, and still reports the error", async () => {
    committedProject()
    const marker = path.join(t.root, 'pwned')
    const payload = path.join(t.root, 'payload.sh')
    writeFileSync(payload, `#!/bin/sh\necho "$0 $*" >> ${marker}\ncat\n`)
    chmodSync(payload, 0o755)
    git(t.work, 'config', 'core.fsmonitor', payload)
    git(t.work, 'config', 'filter.evil.clean', payload)
    git(t.work, 'config', 'filter.evil.process', payload)
    git(t.work, 'config', 'filter.a=b.clean', payload)
    git(t.work, 'config', 'filter.a=b.required', 'true')
    files(t.work, { '.gitattributes': '*.ts filter=evil\n*.json filter=a=b\n' })
    mkdirSync(path.join(t.work, '.git', 'hooks'), { recursive: true })
    for (const hook of ['post-index-change', 'pre-commit', 'post-checkout']) {
      writeFileSync(path.join(t.work, '.git', 'hooks', hook), `#!/bin/sh\n${payload}\n`)
      chmodSync(path.join(t.work, '.git', 'hooks', hook), 0o755)
    }
    // Only this feature runs git on the workspace's repository in this run.
    patchHome('    afterCommands: true\n- id: environment-context\n  config:\n    git: false\n')
    t.mock.enqueue(reply.toolCalls([bash(breakIt)]), reply.text('Broke it.'))
    const run = await t.headless(['break it with sed'], withServers)
    expect(run.code).toBe(0)
    expect(results()[0]).toMatch(TS2322)
    expect(existsSync(marker)).toBe(false)
  })
})

describe('bounds on what a language server sends', () => {
  it('stops a server that announces a message over maxMessageBytes, and says why', async () => {
    files(t.work, { 'a.fake': 'anything\n' })
    // Answers the first request with a header announcing a gigabyte, then trickles bytes forever.
    // In the workspace: the sandbox's /tmp is its own.
    const server = path.join(t.work, 'huge-server.mjs')
    writeFileSync(
      server,
      [
        "process.stdin.once('data', () => {",
        "  process.stdout.write('Content-Length: 1000000000\\r\\n\\r\\n{')",
        "  setInterval(() => process.stdout.write('x'.repeat(1000)), 10)",
        '})',
      ].join('\n'),
    )
    const servers = `    servers:\n      huge:\n        command: ${process.execPath}\n        args: [${JSON.stringify(server)}]\n        extensions: { '.fake': fake }\n`
    patchHome(`- id: lsp-stdio\n  config:\n    maxRestarts: 0\n    maxMessageBytes: 1000000\n${servers}`)
    t.mock.enqueue(reply.toolCalls([lsp('hover', 'a.fake', 1, 1)]), reply.text('Done.'))
    const run = await t.headless(['hover'], withServers)
    expect(run.code).toBe(0)
    expect(results()[0]).toMatch(/^Error: /)
    expect(results()[0]).toContain('a message of 1000000000 bytes is over the limit of 1000000 (maxMessageBytes)')
  })
})

/** Processes whose command line names `program` and whose working directory is `cwd`. */
function serverPids(program: string, cwd: string): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')
      if (!argv.some((arg) => arg.endsWith(`/${program}`) || arg.includes(`/${program}/`))) continue
      if (argv[0]?.endsWith('bwrap') || argv[0]?.endsWith('sh')) continue
      if (readlinkSync(`/proc/${entry}/cwd`) === cwd) found.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return found
}
