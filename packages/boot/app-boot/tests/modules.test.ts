import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createModuleImporter, createModuleResolver, type PreloadedModules } from '../src/modules.ts'
import { tempDir } from '../../../test-support/testkit/src/index.ts'

let dir: string
let cleanup: () => Promise<void>

beforeEach(async () => {
  const tmp = await tempDir()
  dir = tmp.dir
  cleanup = tmp.dispose
})
afterEach(() => cleanup())

const inBox = { apply() {} }
const preloaded: PreloadedModules = new Map([
  ['@dsh/in-box', { file: '/nowhere/in-box.js', load: async () => ({ default: inBox }) }],
])

describe('createModuleImporter', () => {
  it('serves an in-box name from the preloaded modules without touching the installation', async () => {
    const importModule = createModuleImporter({
      home: dir,
      profileDir: path.join(dir, 'profile'),
      installDir: path.join(dir, 'install'),
      preloaded,
    })
    expect(await importModule('@dsh/in-box')).toEqual({ default: inBox })
  })

  it('imports a file row for real, and names the folders a missing name was looked up in', async () => {
    const file = path.join(dir, 'plugin.mjs')
    await writeFile(file, 'export const marker = 42\n')
    const importModule = createModuleImporter({
      home: dir,
      profileDir: path.join(dir, 'profile'),
      installDir: dir,
      preloaded,
    })
    expect(await importModule(file)).toMatchObject({ marker: 42 })
    await expect(importModule('@dsh/not-in-box')).rejects.toThrow(/not found in .*profile or the dsh installation/)
  })

  it('prefers a package the profile installed over the preloaded one of the same name', async () => {
    const profileDir = path.join(dir, 'profile')
    const pkg = path.join(profileDir, 'node_modules', '@dsh', 'in-box')
    await mkdir(pkg, { recursive: true })
    await writeFile(
      path.join(pkg, 'package.json'),
      JSON.stringify({ name: '@dsh/in-box', type: 'module', exports: './index.js' }),
    )
    await writeFile(path.join(pkg, 'index.js'), 'export const fromProfile = true\n')
    const importModule = createModuleImporter({ home: dir, profileDir, installDir: dir, preloaded })
    expect(await importModule('@dsh/in-box')).toMatchObject({ fromProfile: true })
  })
})

describe('createModuleResolver', () => {
  it('says where it looked when a bare name is nowhere to be found', async () => {
    const profileDir = path.join(dir, 'profile')
    await mkdir(profileDir, { recursive: true })
    expect(() => createModuleResolver(profileDir, undefined)('@someone/plugin')).toThrow(
      `not found: ${profileDir} has no node_modules folder to look in`,
    )
    await mkdir(path.join(profileDir, 'node_modules'))
    expect(() => createModuleResolver(profileDir, undefined)('@someone/plugin')).toThrow(`not found in ${profileDir}`)
  })
})
