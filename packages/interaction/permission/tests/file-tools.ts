// Two file tools that declare what they touch, for tests of approval policies (also used by plan-mode's).
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { defineTool } from '@dsh/tools'
import { z } from 'zod'

export const readTool = defineTool({
  name: 'read_file',
  description: 'Read a file.',
  parameters: z.object({ path: z.string() }),
  access: (args) => ({ kind: 'read', paths: [args.path] }),
  execute: () => ({ content: 'read' }),
})

export const writeTool = defineTool({
  name: 'write_file',
  description: 'Write a file.',
  parameters: z.object({ path: z.string(), content: z.string().default('written') }),
  access: (args) => ({ kind: 'write', paths: [args.path] }),
  async execute(args, run) {
    await writeFile(path.resolve(run.cwd, args.path), args.content)
    return { content: `wrote ${args.path}` }
  },
})
