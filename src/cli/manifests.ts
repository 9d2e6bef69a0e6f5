import { readdir, readFile, stat } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { parseManifests } from '../api/index.ts'
import { isObject } from './resources.ts'
import type { JsonObject } from './resources.ts'

/** One object found in a manifest source, with where it came from for messages. */
export interface ManifestObject {
  /** `file.yaml`, or `file.yaml (object 2)` when the file holds several objects. */
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
 * Parses one source's text with the API's own parser (so the client reads YAML exactly as the server
 * does): multi-document YAML, JSON, JSON arrays and `kind: List`; lists of a kind (`KafkaSourceList`) are
 * flattened too. A text that does not parse is one error for the whole source, as with kubectl.
 */
export function parseManifestText(text: string, source: string): { objects: ManifestObject[]; errors: string[] } {
  let values: unknown[]
  try {
    values = parseManifests(text)
  } catch (error) {
    return {
      objects: [],
      errors: [`error parsing ${source}: ${error instanceof Error ? error.message : String(error)}`]
    }
  }
  const flat = values.flatMap(flatten)
  const objects: ManifestObject[] = []
  const errors: string[] = []
  flat.forEach((value, index) => {
    const where = flat.length > 1 ? `${source} (object ${index + 1})` : source
    if (isObject(value)) objects.push({ source: where, value })
    else errors.push(`error parsing ${where}: expected an object with apiVersion and kind, found ${typeof value}`)
  })
  return { objects, errors }
}

function flatten(value: unknown): unknown[] {
  if (Array.isArray(value)) return value.flatMap(flatten)
  if (
    isObject(value) &&
    typeof value['kind'] === 'string' &&
    value['kind'].endsWith('List') &&
    Array.isArray(value['items'])
  ) {
    return value['items'].flatMap(flatten)
  }
  return value === null || value === undefined ? [] : [value]
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
