import { Document, isSeq, isMap, parseDocument, type Node, type ScalarTag } from 'yaml'
import { ConfigError } from './errors.ts'
import { JsExpr } from './rows.ts'

/** `!!js <expression>`: kept as a `JsExpr` node, printed back verbatim. */
const jsTag: ScalarTag = {
  tag: 'tag:yaml.org,2002:js',
  identify: (value) => value instanceof JsExpr,
  resolve: (source) => new JsExpr(source),
  stringify: (item) => String((item.value as JsExpr).source),
}

const options = { customTags: [jsTag], prettyErrors: true }

/** Parses one YAML document; a syntax error names the file, line and column. */
export function parseYaml(text: string, label: string): unknown {
  const doc = parseDocument(text, options)
  const error = doc.errors[0]
  if (error) throw new ConfigError(`${label}: malformed YAML: ${error.message.split('\n')[0]?.replace(/:$/, '')}`)
  return doc.toJS({ maxAliasCount: 100 })
}

const FRONTMATTER = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/

/**
 * Splits Markdown that starts with a `---` YAML block (SKILL.md, command files)
 * into the parsed block and the body after it; `undefined` when there is none.
 */
export function splitFrontmatter(text: string, label: string): { data: unknown; body: string } | undefined {
  const match = FRONTMATTER.exec(text)
  if (!match) return undefined
  return { data: parseYaml(match[1] as string, label), body: text.slice(match[0].length) }
}

/** Prints a value as YAML, with `comments` attached before list items by path ("0", "3.1"). */
export function stringifyYaml(value: unknown, comments: Map<string, string> = new Map()): string {
  const doc = new Document(value, options)
  const visit = (node: Node | null | undefined, path: string): void => {
    if (isSeq(node)) {
      node.items.forEach((item, i) => {
        const key = path ? `${path}.${i}` : String(i)
        const comment = comments.get(key)
        if (comment && item && typeof item === 'object') (item as Node).commentBefore = comment
        visit(item as Node, key)
      })
    } else if (isMap(node)) {
      for (const pair of node.items) {
        if ((pair.key as { value?: unknown })?.value === 'config') visit(pair.value as Node, path)
      }
    }
  }
  visit(doc.contents as Node, '')
  return doc.toString({ lineWidth: 0 })
}
