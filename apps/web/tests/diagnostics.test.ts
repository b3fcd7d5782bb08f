/// <reference types="node" />
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { reply } from '@dsh/llm-mock'
import { finishedEdit, TEST_TIMEOUT_MS, useWebApp } from './support/web-app.ts'

/** The dev dependency of @dsh/lsp-stdio, named by absolute path in the patch below (no PATH change needed). */
const SERVER = fileURLToPath(
  new URL('../../../packages/lsp/lsp-stdio/node_modules/.bin/typescript-language-server', import.meta.url),
)

/** The file tools' path argument: the one place to change if it is renamed. */
const fileArg = (file: string) => ({ file_path: file })

describe('language-server diagnostics in the browser', { timeout: TEST_TIMEOUT_MS }, () => {
  const t = useWebApp({
    files: {
      'tsconfig.json': JSON.stringify({ compilerOptions: { strict: true, noEmit: true }, include: ['*.ts'] }),
      'count.ts': 'export const count: number = 1\n',
    },
    prepareHome: async (home) => {
      await mkdir(home, { recursive: true })
      await writeFile(
        path.join(home, 'cordis.patch.yml'),
        [
          '- id: lsp-stdio',
          '  config:',
          '    servers:',
          '      typescript:',
          `        command: ${JSON.stringify(SERVER)}`,
          '        args: [--stdio]',
          "        extensions: { '.ts': typescript }",
          '        rootMarkers: [tsconfig.json]',
          '        initializationOptions: { tsserver: { useSyntaxServer: never } }',
          '- id: lsp-diagnostics',
          '  config: { waitMs: 90000 }',
          '',
        ].join('\n'),
      )
    },
  })

  it('shows the type error an edit introduced in the edit’s tool card', async () => {
    t.script(
      reply.toolCalls([{ name: 'read', arguments: fileArg('count.ts') }]),
      reply.toolCalls([
        { name: 'edit', arguments: { ...fileArg('count.ts'), old_string: '= 1', new_string: "= 'one'" } },
      ]),
      reply.text('Changed it.'),
    )
    const page = await t.start('Make count a word')
    const { card, diff } = await finishedEdit(page)
    const problems = card.getByRole('region', { name: 'Language server: 1 problem' })
    await problems.waitFor()
    expect(await problems.locator('pre').textContent()).toBe(
      `${path.join(t.work, 'count.ts')}:1:14 error TS2322: Type 'string' is not assignable to type 'number'.`,
    )
    expect(await diff.textContent()).not.toContain('Language server')
    await t.screenshot('tool-diagnostics')
  })
})
