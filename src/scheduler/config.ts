import { Ajv } from 'ajv'
import type { ErrorObject, ValidateFunction } from 'ajv'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { FieldError } from '../errors/index.ts'
import { deepFreeze } from '../util/index.ts'
import type { PluginType, SchedulerPlugin } from './plugin.ts'
import type { PluginRegistry } from './registry.ts'

/** One enabled filter plugin and its arguments (defaults applied). */
export interface FilterEntry {
  readonly name: string
  readonly args?: unknown
}

/** One enabled score or removal plugin, its weight and its arguments (defaults applied). */
export interface WeightedEntry {
  readonly name: string
  readonly weight: number
  readonly args?: unknown
}

/** How much each part counts in the balancedness score (non-negative integers, not all zero). */
export interface BalancednessWeights {
  readonly zoneSpread: number
  readonly nodeSpread: number
  readonly load: number
}

/** A validated, defaulted and frozen scheduler config. */
export interface SchedulerConfig {
  readonly filters: readonly FilterEntry[]
  readonly scores: readonly WeightedEntry[]
  readonly removals: readonly WeightedEntry[]
  readonly balancedness: BalancednessWeights
}

/** The weights of the balancedness parts when a config gives none. */
export const DEFAULT_BALANCEDNESS: BalancednessWeights = Object.freeze({ zoneSpread: 4, nodeSpread: 3, load: 3 })

const SECTIONS: ReadonlyArray<{ readonly key: 'filters' | 'scores' | 'removals'; readonly type: PluginType }> = [
  { key: 'filters', type: 'filter' },
  { key: 'scores', type: 'score' },
  { key: 'removals', type: 'removal' }
]

const weight = { type: 'integer', minimum: 1 }
const args = { type: 'object' }
const nonNegative = { type: 'integer', minimum: 0 }

// Score and removal sections list the same entries (WeightedEntry).
const weightedEntries = {
  type: 'array',
  items: {
    type: 'object',
    required: ['name', 'weight'],
    properties: { name: { type: 'string' }, weight, args },
    additionalProperties: false
  }
} as const

const configSchema = {
  type: 'object',
  required: ['filters', 'scores', 'removals'],
  properties: {
    filters: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string' }, args },
        additionalProperties: false
      }
    },
    scores: weightedEntries,
    removals: weightedEntries,
    balancedness: {
      type: 'object',
      properties: { zoneSpread: nonNegative, nodeSpread: nonNegative, load: nonNegative },
      additionalProperties: false
    }
  },
  additionalProperties: false
} as const

const ajv = new Ajv({ allErrors: true, strict: true, useDefaults: false })
let shapeValidator: ValidateFunction | undefined
const argsValidators = new WeakMap<SchedulerPlugin, ValidateFunction>()

function argsValidator(plugin: SchedulerPlugin): ValidateFunction | undefined {
  if (plugin.args === undefined) return undefined
  let validate = argsValidators.get(plugin)
  if (validate === undefined) {
    validate = ajv.compile(plugin.args.schema)
    argsValidators.set(plugin, validate)
  }
  return validate
}

/**
 * Validates a scheduler config (parsed YAML or JSON) against the registry's plugins, applies the defaults and
 * returns it deeply frozen. Throws one SHOAL_CONFIG naming every offending field by its path (`scores[1].weight`).
 */
export function parseSchedulerConfig(
  input: unknown,
  registry: PluginRegistry,
  what = 'scheduler config'
): SchedulerConfig {
  shapeValidator ??= ajv.compile(configSchema)
  if (!shapeValidator(input)) throw configError(what, (shapeValidator.errors ?? []).map(toFieldError))
  const raw = input as {
    readonly filters: readonly RawEntry[]
    readonly scores: readonly RawEntry[]
    readonly removals: readonly RawEntry[]
    readonly balancedness?: Partial<BalancednessWeights>
  }
  const errors: FieldError[] = []
  const sections = SECTIONS.map(({ key, type }) => {
    const seen = new Set<string>()
    return raw[key].map((entry, index) => {
      const path = `${key}[${index}]`
      if (seen.has(entry.name)) errors.push({ path: `${path}.name`, message: `${entry.name} is listed twice` })
      seen.add(entry.name)
      const plugin = registry.get(entry.name)
      if (plugin === undefined || plugin.type !== type) {
        errors.push({ path: `${path}.name`, message: unknownPlugin(entry.name, type, plugin, registry) })
        return entry
      }
      return { ...entry, args: checkArgs(plugin, entry.args, `${path}.args`, errors) }
    })
  })
  const balancedness = { ...DEFAULT_BALANCEDNESS, ...raw.balancedness }
  if (balancedness.zoneSpread + balancedness.nodeSpread + balancedness.load === 0) {
    errors.push({ path: 'balancedness', message: 'at least one weight must be positive' })
  }
  if (errors.length > 0) throw configError(what, errors)
  const [filters, scores, removals] = sections as [FilterEntry[], WeightedEntry[], WeightedEntry[]]
  return deepFreeze({ filters, scores, removals, balancedness })
}

interface RawEntry {
  readonly name: string
  readonly weight?: number
  readonly args?: Record<string, unknown>
}

function checkArgs(plugin: SchedulerPlugin, given: unknown, path: string, errors: FieldError[]): unknown {
  const validate = argsValidator(plugin)
  if (validate === undefined || plugin.args === undefined) {
    if (given !== undefined) errors.push({ path, message: `${plugin.name} takes no arguments` })
    return undefined
  }
  const merged = { ...(plugin.args.defaults as object), ...(given as object | undefined) }
  if (!validate(merged)) {
    for (const error of validate.errors ?? []) {
      const field = toFieldError(error)
      errors.push({ path: field.path === '(root)' ? path : `${path}.${field.path}`, message: field.message })
    }
  }
  return merged
}

function unknownPlugin(name: string, type: PluginType, found: SchedulerPlugin | undefined, registry: PluginRegistry) {
  if (found !== undefined) return `${name} is a ${found.type} plugin, not a ${type} plugin`
  return `unknown ${type} plugin ${JSON.stringify(name)} (known: ${registry.names(type).join(', ')})`
}

function configError(what: string, fields: readonly FieldError[]): ShoalError {
  const detail = fields.map(f => `${f.path}: ${f.message}`).join('; ')
  return new ShoalError(ErrorCodes.CONFIG, `${what} is invalid: ${detail}`, { fields })
}

/** `/scores/1/weight` → `scores[1].weight`; an unknown property is named in the path itself. */
function toFieldError(error: ErrorObject): FieldError {
  const segments = error.instancePath
    .split('/')
    .slice(1)
    .map(s => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  let message = error.message ?? 'is invalid'
  if (error.keyword === 'additionalProperties') {
    const property = (error.params as { additionalProperty: string }).additionalProperty
    segments.push(property)
    message = 'is not a known field'
  } else if (error.keyword === 'required') {
    segments.push((error.params as { missingProperty: string }).missingProperty)
    message = 'is required'
  } else if (error.keyword === 'minimum' && error.instancePath.endsWith('/weight')) {
    message = 'must be a positive integer'
  }
  return { path: formatPath(segments), message }
}

function formatPath(segments: readonly string[]): string {
  let out = ''
  for (const segment of segments) {
    if (/^\d+$/.test(segment)) out += `[${segment}]`
    else if (/^[A-Za-z_$][\w$]*$/.test(segment)) out += out === '' ? segment : `.${segment}`
    else out += `[${JSON.stringify(segment)}]`
  }
  return out === '' ? '(root)' : out
}
