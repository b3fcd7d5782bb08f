import Schema from 'schemastery'

/** A list of strings with a default (empty unless given): allow-lists, file names, patterns. */
export function stringList(description: string, defaults: string[] = []): Schema<string[]> {
  return Schema.array(Schema.string()).default(defaults).description(description)
}

/** A string with a default, empty unless given; empty usually means "not set, use the fallback the text names". */
export function stringValue(description: string, fallback = ''): Schema<string> {
  return Schema.string().default(fallback).description(description)
}
