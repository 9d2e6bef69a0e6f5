// Pieces every resource schema is built from, so a Dispatcher, a Secret and a source say them the same way.

/** Keys and values both strings: labels, annotations, a Secret's data. */
export const stringMap = { type: 'object', additionalProperties: { type: 'string' } }

/**
 * A field the server sets. kubectl writes `creationTimestamp: null` into the manifests it generates, so null is
 * accepted for these.
 */
export function serverSet(type: string, description?: string): Readonly<Record<string, unknown>> {
  return { type: [type, 'null'], ...(description === undefined ? {} : { description }) }
}

/** The metadata fields the server sets, as a manifest may carry them (ignored there). */
export const serverSetMetadata = {
  uid: serverSet('string'),
  generation: serverSet('integer'),
  resourceVersion: serverSet('string'),
  creationTimestamp: serverSet('string')
}
