import type { ErrorObject } from 'ajv'
import type { FieldError } from '../errors/index.ts'

/**
 * ajv's errors of a small kind's schema as field errors: the field each names (`metadata.name`, `(root)`),
 * "unknown field" (or `unknownField(name)`) and "required" for those keywords, `otherMessage(error)` for the rest.
 */
export function fieldErrorsOf(
  errors: readonly ErrorObject[] | null | undefined,
  otherMessage: (error: ErrorObject) => string,
  unknownField: (name: string) => string = () => 'unknown field'
): FieldError[] {
  return (errors ?? []).map(e => {
    const base = e.instancePath.replace(/^\//, '').replaceAll('/', '.')
    const extra =
      e.keyword === 'additionalProperties'
        ? String(e.params['additionalProperty'])
        : e.keyword === 'required'
          ? String(e.params['missingProperty'])
          : ''
    const path = [base, extra].filter(Boolean).join('.') || '(root)'
    const message =
      e.keyword === 'additionalProperties'
        ? unknownField(extra)
        : e.keyword === 'required'
          ? 'required'
          : otherMessage(e)
    return { path, message }
  })
}
