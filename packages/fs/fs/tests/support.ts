import { mkdir, mkdtemp, realpath } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { expect } from 'vitest'
import { FileSystemError } from '../src/index.ts'

/** The error a promise rejects with; fails the test when it resolves or rejects with something else. */
export async function failureOf(promise: Promise<unknown>): Promise<FileSystemError> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(FileSystemError)
    return error as FileSystemError
  }
  throw new Error('expected a rejection')
}

/**
 * A scratch folder named from `prefix` holding an empty workspace `ws` and a
 * sibling folder `outside`. Real paths, so that expectations do not depend on
 * a symlinked temp folder.
 */
export async function scratchWorkspace(prefix: string): Promise<{ base: string; workspace: string; outside: string }> {
  const base = await realpath(await mkdtemp(path.join(tmpdir(), prefix)))
  const workspace = path.join(base, 'ws')
  const outside = path.join(base, 'outside')
  await mkdir(workspace)
  await mkdir(outside)
  return { base, workspace, outside }
}
