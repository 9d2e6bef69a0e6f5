import { parseAllDocuments } from 'yaml'
import type { YAMLError } from 'yaml'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { FieldError } from '../errors/index.ts'
import { nestingDepthBound } from './nesting-depth.ts'
import { isRecord } from './semantic-checks.ts'

/** The largest manifest text parseManifests accepts unless told otherwise: 1 MiB. */
export const DEFAULT_MAX_MANIFEST_BYTES = 1024 * 1024

// Aliases are legal YAML, but a few nested ones expand exponentially ("billion laughs"); real manifests use few.
const MAX_ALIAS_COUNT = 50
const MAX_REPORTED_ERRORS = 20
// Far above any real manifest (validation refuses more than 64 levels anyway), far below what slows the parser.
const MAX_NESTING_DEPTH = 200

export interface ParseManifestsOptions {
  /** Refuse texts larger than this many UTF-8 bytes (SHOAL_TOO_LARGE). Default 1 MiB. */
  readonly maxBytes?: number
}

/**
 * The objects of a YAML or JSON text: one per document of a multi-document stream; a JSON array or a
 * `kind: List` expands to its items; empty documents are skipped. Values are not validated (see
 * validateResource). Throws SHOAL_MALFORMED (with line and column) or SHOAL_TOO_LARGE.
 */
export function parseManifests(text: string, options: ParseManifestsOptions = {}): unknown[] {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_MANIFEST_BYTES
  if (text.length > maxBytes || Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw new ShoalError(
      ErrorCodes.TOO_LARGE,
      `manifest is ${Buffer.byteLength(text, 'utf8')} bytes; the limit is ${maxBytes} bytes`
    )
  }
  const depth = nestingDepthBound(text)
  if (depth > MAX_NESTING_DEPTH) {
    throw new ShoalError(
      ErrorCodes.MALFORMED,
      `manifest nests ${depth} levels deep (counting brackets and compact "- " items); the limit is ${MAX_NESTING_DEPTH}`
    )
  }
  const documents = parseAllDocuments(text.replace(/^\uFEFF/, ''), {
    version: '1.2',
    schema: 'core',
    resolveKnownTags: false,
    merge: true,
    uniqueKeys: true,
    stringKeys: true,
    strict: true,
    prettyErrors: true,
    logLevel: 'silent'
  })
  const problems = documents.flatMap(doc => [...doc.errors, ...doc.warnings])
  if (problems.length > 0) throw malformed(problems)
  const values: unknown[] = []
  for (const doc of documents) {
    if (doc.contents === null) continue
    let value: unknown
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT })
    } catch (error) {
      if (error instanceof ReferenceError && /excessive alias/i.test(error.message)) {
        throw new ShoalError(
          ErrorCodes.TOO_LARGE,
          'manifest uses too many aliases (its expansion would be too large)',
          {
            cause: error
          }
        )
      }
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error)
      throw new ShoalError(ErrorCodes.MALFORMED, `manifest is malformed: ${message}`, { cause: error })
    }
    if (value === null || value === undefined) continue
    values.push(...expand(value))
  }
  return values
}

function expand(value: unknown): unknown[] {
  if (Array.isArray(value)) return value
  if (isRecord(value) && value['kind'] === 'List' && Array.isArray(value['items'])) return value['items']
  return [value]
}

function malformed(problems: readonly YAMLError[]): ShoalError {
  const fields: FieldError[] = problems.slice(0, MAX_REPORTED_ERRORS).map(problem => {
    const at = problem.linePos?.[0]
    const message = (problem.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')
    return { path: at === undefined ? '(document)' : `line ${at.line}, column ${at.col}`, message }
  })
  const first = fields[0] as FieldError
  return new ShoalError(ErrorCodes.MALFORMED, `manifest is malformed at ${first.path}: ${first.message}`, { fields })
}
