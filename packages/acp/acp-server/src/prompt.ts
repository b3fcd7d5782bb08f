import { fileURLToPath } from 'node:url'
import { type ContentBlock as AcpContent, RequestError } from '@agentclientprotocol/sdk'
import { checkedPrompt, type PromptBlock } from '@dsh/conversations'
import type { Message } from '@dsh/llm'
import { schemas } from '@dsh/sdk-protocol'

export interface PromptLimits {
  /** Whether image blocks are accepted (the model takes images). */
  images: boolean
  /** The model named in the refusal of an image. */
  model: string
  /** The most UTF-8 bytes of text plus base64 characters of images (`checkedPrompt` of `@dsh/conversations`). */
  maxBytes: number
}

/** Where a resource lives, as a path when it is a file URI. */
function location(uri: string): string {
  if (!uri.startsWith('file://')) return uri
  try {
    return fileURLToPath(uri)
  } catch {
    return uri
  }
}

function refuse(message: string): RequestError {
  return RequestError.invalidParams(undefined, message)
}

/**
 * The user message for an ACP prompt. Text stays as written; a resource link
 * becomes a Markdown link the model can follow with its tools; an embedded
 * text resource is inlined in a `<context>` element naming where it came from;
 * images (and image blobs) become image blocks when the model takes them.
 * Audio and other binary resources are refused with -32602; an empty or
 * oversized prompt is refused by `checkedPrompt` (`invalid` naming `content`).
 */
export function promptMessage(blocks: readonly AcpContent[], limits: PromptLimits): Message {
  const content: PromptBlock[] = []
  let text = ''
  const flush = () => {
    if (text.trim()) content.push({ type: 'text', text })
    text = ''
  }
  const image = (mimeType: string, data: string, what: string) => {
    if (!limits.images) throw refuse(`${what} cannot be used: the model ${limits.model} does not take images`)
    // The SDK protocol's definition of a prompt's image.
    if (!schemas.ImageMediaType.safeParse(mimeType).success)
      throw refuse(`${what} has type ${mimeType}; images must be ${schemas.ImageMediaType.options.join(', ')}`)
    if (!schemas.ImageData.safeParse(data).success) throw refuse(`${what} is not valid base64`)
    flush()
    content.push({ type: 'image', mediaType: mimeType, data })
  }
  for (const [index, block] of blocks.entries()) {
    const what = `prompt[${index}] (${block.type})`
    switch (block.type) {
      case 'text':
        text += block.text
        break
      case 'resource_link': {
        const link = `[${block.title ?? block.name}](${location(block.uri)})`
        text += text && !/\s$/.test(text) ? ` ${link}` : link
        break
      }
      case 'resource': {
        const resource = block.resource
        if ('text' in resource) {
          text += `\n<context source="${location(resource.uri).replace(/"/g, '&quot;')}">\n${resource.text}\n</context>\n`
        } else if (resource.mimeType?.startsWith('image/')) {
          image(resource.mimeType, resource.blob, what)
        } else {
          throw refuse(
            `${what}: the binary resource ${resource.uri} (${resource.mimeType ?? 'no type'}) cannot be used; embed text or an image`,
          )
        }
        break
      }
      case 'image':
        image(block.mimeType, block.data, what)
        break
      case 'audio':
        throw refuse(`${what}: audio prompts are not supported`)
      default:
        throw refuse(`${what}: unknown content type`)
    }
  }
  flush()
  return checkedPrompt(content, limits.maxBytes, 'acp-server config maxPromptBytes')
}
