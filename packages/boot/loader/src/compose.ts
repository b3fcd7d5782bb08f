// The composition half of the loader, without cordis: parsing patch files,
// applying layers and printing dumps. The launcher's dump path imports only this.
export { ConfigError } from './errors.ts'
export { JsExpr, type Row, type Disabled, checkRow, walkRows, isPlainObject } from './rows.ts'
export { parseYaml, splitFrontmatter, stringifyYaml } from './yaml.ts'
export { parsePatchList, applyPatches, type Layer, type PatchEntry, type Origin, type Composed } from './patch.ts'
export { renderComposed } from './dump.ts'
