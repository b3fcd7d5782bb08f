import { Schema } from '@dsh/cordis'

export interface FsToolsConfig {
  readLimit: number
  maxLineLength: number
  maxReadBytes: number
  diffContextLines: number
  maxDiffLines: number
}

export const Config: Schema<FsToolsConfig> = Schema.object({
  readLimit: Schema.natural().min(1).default(2000).description('Lines `read` shows by default, and the most a call may ask for.'),
  maxLineLength: Schema.natural().min(1).default(2000).description('Characters of one line `read` shows before cutting it.'),
  maxReadBytes: Schema.natural().min(1).default(51_200).description('Bytes of numbered lines one `read` returns at most.'),
  diffContextLines: Schema.natural().default(3).description('Unchanged lines shown around each change in the diff `edit` returns.'),
  maxDiffLines: Schema.natural().min(1).default(120).description('Lines of diff `edit` returns at most.'),
})
