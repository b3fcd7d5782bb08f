/** The image formats `read` returns as image blocks, told apart by their first bytes. */
export type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp'

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
const JPEG = [0xff, 0xd8, 0xff]

function startsWith(bytes: Uint8Array, prefix: readonly number[], at = 0): boolean {
  if (bytes.length < at + prefix.length) return false
  return prefix.every((byte, i) => bytes[at + i] === byte)
}

function ascii(text: string): number[] {
  return [...text].map((c) => c.charCodeAt(0))
}

/** The media type of an image by its magic bytes; undefined for anything else (the file name plays no part). */
export function imageType(head: Uint8Array): ImageMediaType | undefined {
  if (startsWith(head, PNG)) return 'image/png'
  if (startsWith(head, JPEG)) return 'image/jpeg'
  if (startsWith(head, ascii('GIF87a')) || startsWith(head, ascii('GIF89a'))) return 'image/gif'
  if (startsWith(head, ascii('RIFF')) && startsWith(head, ascii('WEBP'), 8)) return 'image/webp'
  return undefined
}

/** A short name for messages: `PNG`, `JPEG`, ... */
export function imageName(type: ImageMediaType): string {
  return type.slice('image/'.length).toUpperCase()
}
