import type { Context } from '@dsh/cordis'
import type {} from '@dsh/llm'
import { defineTool, ToolError, type ToolOutput, toolParameters } from '@dsh/tools'
import { pathTitle } from './presentation.ts'
import { z } from 'zod'
import type { FsToolsConfig } from './config.ts'
import { fileAccess, MAX_PATH_LENGTH } from './files.ts'
import { imageType } from './image.ts'
import { imageOutput, openFile, sniff } from './read.ts'

const readImageParameters = toolParameters(
  z.object({
    file_path: z
      .string()
      .min(1)
      .max(MAX_PATH_LENGTH)
      .describe('Path to the image file, absolute or relative to the workspace.'),
  }),
)

/**
 * `read_image`: one image file as an image block for the model, through the
 * same file system seam, limits and format detection (by content, not by
 * name) as `read`. It refuses when the session's model does not declare image input.
 */
export function readImageTool(ctx: Context, config: FsToolsConfig) {
  return defineTool({
    name: 'read_image',
    presentation: { kind: 'read', view: 'read', title: pathTitle('Read image') },
    description:
      'Read a PNG, JPEG, WebP or GIF file and see the image itself. The format is told by the file content, so a path ' +
      `without an extension works too. Images up to ${config.maxImageBytes} bytes. Use it instead of installing image ` +
      'tools or making thumbnails; independent images can be read in parallel. Needs a model that accepts images.',
    parameters: readImageParameters,
    readOnly: true,
    isConcurrencySafe: () => true,
    access: fileAccess('read', 'read image'),
    async execute(args, run): Promise<ToolOutput> {
      const model = ctx.get('agents')?.get(run.sessionId)?.options
      if (model && !ctx.get('llm')?.takesImages(model.provider, model.model))
        throw new ToolError(
          'FS_MODEL_NO_IMAGES',
          `the model ${model.model} does not accept images, so read_image cannot show ${args.file_path}. ` +
            'Describe what you need from the file another way, or ask the user to switch to a model with image input.',
        )
      const { info, stream, shown } = await openFile(ctx, run, args.file_path)
      const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>
      try {
        const head = await sniff(chunks)
        const image = imageType(head.bytes)
        if (!image)
          throw new ToolError(
            'FS_NOT_IMAGE',
            `${shown} is not a PNG, JPEG, GIF or WebP image (judged by its content). Use the read tool for text files.`,
          )
        return await imageOutput(chunks, head, image, info, shown, config.maxImageBytes, 'read_image')
      } finally {
        await chunks.return?.()
        stream.destroy()
      }
    },
  })
}

/**
 * Shows `read_image` only to sessions whose current model takes images (a
 * restriction per agent, asked on every request, so a model change shows or
 * hides it): a text-only model is not offered a tool it cannot use.
 */
export function offerToImageModels(ctx: Context): void {
  const lifts = new Map<string, () => void>()
  const lift = (id: string) => {
    lifts.get(id)?.()
    lifts.delete(id)
  }
  ctx.on('agent/created', (agent) => {
    lift(agent.id)
    const allow = (name: string) =>
      name !== 'read_image' || ctx.get('llm')?.takesImages(agent.options.provider, agent.options.model) === true
    lifts.set(agent.id, ctx.tools.restrict(ctx, agent.id, allow))
  })
  ctx.on('agent/disposed', (agent) => lift(agent.id))
}
