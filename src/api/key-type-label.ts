/**
 * How a KafkaSource's record keys become the `key` and `partitionkey` extensions: Knative's label
 * `kafkasources.sources.knative.dev/key-type` (a label in Knative, not an annotation: its reconciler reads
 * `metadata.labels`). See docs/kafka-source.md "Record keys".
 */
export const KEY_TYPE_LABEL = 'kafkasources.sources.knative.dev/key-type'

/** The values Knative knows; `string` is the default. */
export const KAFKA_KEY_TYPES = Object.freeze(['string', 'int', 'float', 'byte-array'] as const)

export type KafkaKeyType = (typeof KAFKA_KEY_TYPES)[number]

/** A source's key type, and why it is not what its manifest says (an unknown value, or the name as an annotation). */
export interface KeyTypeSetting {
  readonly keyType: KafkaKeyType
  readonly warning?: string
}

/**
 * The key type a source's metadata asks for, as Knative reads it: the label when it is set and not empty, exactly
 * one of the four names (case-sensitive); anything else is `string` (Knative's data plane falls back to its
 * string deserializer), with a warning. Without the label, the same name as an annotation is taken too (Knative
 * ignores it), with a warning that says so.
 */
export function keyTypeOf(metadata: {
  readonly labels?: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
}): KeyTypeSetting {
  const value = metadata.labels?.[KEY_TYPE_LABEL]
  if (value === undefined || value === '') {
    const annotation = metadata.annotations?.[KEY_TYPE_LABEL]
    if (annotation === undefined || annotation === '') return { keyType: 'string' }
    const path = `metadata.annotations["${KEY_TYPE_LABEL}"]`
    if (!(KAFKA_KEY_TYPES as readonly string[]).includes(annotation)) {
      return {
        keyType: 'string',
        warning: `${path}: unknown key type ${JSON.stringify(annotation)} (one of ${KAFKA_KEY_TYPES.join(', ')}); keys are read as string`
      }
    }
    // Users write it as an annotation (it reads like one); Shoal takes it, and says Knative would not.
    return {
      keyType: annotation as KafkaKeyType,
      warning: `${path}: taken as the key type, but Knative reads only the label (metadata.labels); set it there to keep the manifest portable`
    }
  }
  if ((KAFKA_KEY_TYPES as readonly string[]).includes(value)) return { keyType: value as KafkaKeyType }
  return {
    keyType: 'string',
    warning:
      `metadata.labels["${KEY_TYPE_LABEL}"]: unknown key type ${JSON.stringify(value)} ` +
      `(one of ${KAFKA_KEY_TYPES.join(', ')}); keys are read as string`
  }
}
