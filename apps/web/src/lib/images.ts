import type { ImageAttachment } from '@dsh/web-client'

export interface PendingImage extends ImageAttachment {
  id: string
  name: string
}

let counter = 0
const ACCEPTED = /^image\/(png|jpeg|gif|webp)$/

/** Reads image files (from a paste or a drop) as base64 attachments; other files are skipped. */
export async function readImages(files: Iterable<File>): Promise<PendingImage[]> {
  const images: PendingImage[] = []
  for (const file of files) {
    if (!ACCEPTED.test(file.type)) continue
    const dataUrl = await new Promise<string>((resolve, reject) => {
      const reader = new FileReader()
      reader.onload = () => resolve(String(reader.result))
      reader.onerror = () => reject(reader.error ?? new Error(`reading ${file.name} failed`))
      reader.readAsDataURL(file)
    })
    images.push({ id: `image-${++counter}`, name: file.name || 'pasted image', mediaType: file.type, data: dataUrl.slice(dataUrl.indexOf(',') + 1) })
  }
  return images
}

export function dataUrlOf(image: ImageAttachment): string {
  return `data:${image.mediaType};base64,${image.data}`
}
