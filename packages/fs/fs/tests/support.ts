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
