import { readdir, readFile, stat } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { isObject } from './resources.ts'
import type { JsonObject } from './resources.ts'

/** One object found in a manifest source, with where it came from for messages. */
export interface ManifestObject {
  /** `file.yaml`, or `file.yaml (document 2)` when the file holds several documents. */
  readonly source: string
  readonly value: JsonObject
}

/** Objects read from `-f` sources, and what could not be read (each a message naming the source). */
export interface ManifestRead {
  readonly objects: readonly ManifestObject[]
  readonly errors: readonly string[]
}

const manifestExtensions = new Set(['.yaml', '.yml', '.json'])

/**
 * Parses one source's text: multi-document YAML, JSON (YAML 1.2 reads it as is), JSON arrays and `List`
 * objects (`kind: List`, or any `…List` with `items`), flattened into the objects they hold, in order.
 */
export function parseManifestText(text: string, source: string): { objects: ManifestObject[]; errors: string[] } {
  const objects: ManifestObject[] = []
  const errors: string[] = []
  const documents = parseAllDocuments(text)
  if (!Array.isArray(documents)) return { objects, errors } // an empty stream
  documents.forEach((document, index) => {
    const where = documents.length > 1 ? `${source} (document ${index + 1})` : source
    const [first] = document.errors
    if (first !== undefined) {
      errors.push(`error parsing ${where}: ${first.message.split('\n')[0] ?? first.message}`)
      return
    }
    flatten(document.toJS({ maxAliasCount: 1000 }), where, objects, errors)
  })
  return { objects, errors }
}

function flatten(value: unknown, where: string, objects: ManifestObject[], errors: string[]): void {
  if (value === null || value === undefined) return
  if (Array.isArray(value)) {
    for (const item of value) flatten(item, where, objects, errors)
    return
  }
  if (!isObject(value)) {
    errors.push(`error parsing ${where}: expected an object with apiVersion and kind, found ${typeof value}`)
    return
  }
  const kind = value['kind']
  if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(value['items'])) {
    for (const item of value['items']) flatten(item, where, objects, errors)
    return
  }
  objects.push({ source: where, value })
}

/**
 * Reads every `-f` source in order: a file, a directory (its `*.yaml`, `*.yml` and `*.json` files, sorted,
 * not recursive) or `-` for standard input.
 */
export async function readManifests(paths: readonly string[], readStdin: () => Promise<string>): Promise<ManifestRead> {
  const objects: ManifestObject[] = []
  const errors: string[] = []
  const add = (text: string, source: string): void => {
    const parsed = parseManifestText(text, source)
    objects.push(...parsed.objects)
    errors.push(...parsed.errors)
  }
  for (const path of paths) {
    if (path === '-') {
      add(await readStdin(), 'stdin')
      continue
    }
    let files: string[]
    try {
      files = (await stat(path)).isDirectory() ? await manifestFilesIn(path) : [path]
    } catch (error) {
      errors.push(describeFsError(path, error))
      continue
    }
    for (const file of files) {
      try {
        add(await readFile(file, 'utf8'), file)
      } catch (error) {
        errors.push(describeFsError(file, error))
      }
    }
  }
  return { objects, errors }
}

async function manifestFilesIn(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true })
  return entries
    .filter(e => (e.isFile() || e.isSymbolicLink()) && manifestExtensions.has(extname(e.name).toLowerCase()))
    .map(e => e.name)
    .sort()
    .map(name => join(directory, name))
}

function describeFsError(path: string, error: unknown): string {
  const code = (error as { code?: unknown }).code
  if (code === 'ENOENT') return `the path "${path}" does not exist`
  if (code === 'EACCES') return `the path "${path}" cannot be read: permission denied`
  return `the path "${path}" cannot be read: ${error instanceof Error ? error.message : String(error)}`
}
