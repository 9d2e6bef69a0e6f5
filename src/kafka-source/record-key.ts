import type { KafkaKeyType } from '../api/index.ts'
import { javaDoubleToString, javaFloatToString } from './java-number.ts'
import { decodeUtf8 } from './kafka-record.ts'

// A record key as the text of the `key` / `partitionkey` extensions, by the source's key type: Knative's
// KeyDeserializer (eventing-kafka-broker data-plane/dispatcher) and how the CloudEvents SDK writes what it returns.
// Pure; never throws: a key whose length does not fit its type is read as a string, as Knative does.

/** The key's extension value; undefined for a null or empty key (Knative's deserializer returns null for both). */
export function keyExtensionValue(key: Buffer | null | undefined, keyType: KafkaKeyType): string | undefined {
  if (key === null || key === undefined || key.length === 0) return undefined
  switch (keyType) {
    case 'int':
      // Kafka's IntegerDeserializer: 4 bytes, big-endian, signed.
      if (key.length === 4) return String(key.readInt32BE(0))
      break
    case 'float':
      // Kafka's FloatDeserializer (4 bytes) or DoubleDeserializer (8 bytes), big-endian; Java's toString.
      if (key.length === 4) return javaFloatToString(key.readUInt32BE(0))
      if (key.length === 8) return javaDoubleToString(key.readBigUInt64BE(0))
      break
    case 'byte-array':
      // The SDK writes a byte[] extension as standard base64 with padding.
      return key.toString('base64')
    case 'string':
      break
  }
  return textOrBase64(key)
}

// UTF-8 text as it is; other bytes as base64, never lossy (Knative's StringDeserializer writes U+FFFD for them).
export function textOrBase64(bytes: Buffer): string {
  return decodeUtf8(bytes) ?? bytes.toString('base64')
}
