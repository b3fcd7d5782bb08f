import { dataUrlOf, type PendingImage } from '../../lib/images.ts'
import { Icon } from '../common/Icon.tsx'
import styles from './AttachmentRail.module.css'

/** Thumbnails of the images that go with the next message. */
export function AttachmentRail({
  images,
  onRemove,
}: {
  images: readonly PendingImage[]
  onRemove: (id: string) => void
}) {
  if (images.length === 0) return null
  return (
    <ul className={styles.rail} aria-label="Attached images">
      {images.map((image) => (
        <li key={image.id} className={styles.item}>
          <img className={styles.thumb} src={dataUrlOf(image)} alt={image.name} />
          <button
            type="button"
            className={styles.remove}
            aria-label={`Remove ${image.name}`}
            onClick={() => onRemove(image.id)}
          >
            <Icon name="close" size={12} />
          </button>
        </li>
      ))}
    </ul>
  )
}
