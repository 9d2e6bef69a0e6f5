import { DispatcherKind, apiVersionOf } from './kinds.ts'
import { validateDispatcher } from './dispatcher.ts'
import type { DispatcherResource } from './dispatcher.ts'
import { validateSecret } from './secret.ts'
import type { SecretResource } from './secret.ts'
import type { SourceResource } from './types.ts'
import { DEFAULT_NAMESPACE, validateResource } from './validate.ts'

/** Any object the API serves: a source, validated by validateResource, a Dispatcher, or a Secret. */
export type ShoalResource = SourceResource | DispatcherResource | SecretResource

/** Validates any served object, dispatching on its kind. */
export function validateObject(input: unknown): ShoalResource {
  if (
    typeof input === 'object' &&
    input !== null &&
    (input as { kind?: unknown }).kind === DispatcherKind.kind &&
    (input as { apiVersion?: unknown }).apiVersion === apiVersionOf(DispatcherKind)
  ) {
    return validateDispatcher(input as Record<string, unknown>)
  }
  if (
    typeof input === 'object' &&
    input !== null &&
    (input as { kind?: unknown }).kind === 'Secret' &&
    (input as { apiVersion?: unknown }).apiVersion === 'v1'
  ) {
    return validateSecret(input as Record<string, unknown>, DEFAULT_NAMESPACE)
  }
  return validateResource(input)
}
