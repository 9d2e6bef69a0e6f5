import { withStoredDefaults } from '../api/index.ts'
import type {
  StoredDispatcher,
  StoredEntry,
  StoredKafkaSource,
  StoredObject,
  StoredPingSource,
  StoredSecret,
  StoredSource
} from './types.ts'

// The store holds only what the API validated and defaulted (and storedObjectOf defaults again what it reads), so
// an object's kind says what its spec is: these guards are where `unknown` becomes the kind's type.

function objectOf(value: StoredEntry | StoredObject): StoredObject {
  return 'object' in value ? value.object : value
}

/** A KafkaSource: its `spec` is the defaulted StoredKafkaSourceSpec (consumer group set). */
export function isKafkaSource(object: StoredObject): object is StoredKafkaSource
export function isKafkaSource(entry: StoredEntry): entry is StoredEntry<StoredKafkaSource>
export function isKafkaSource(value: StoredEntry | StoredObject): boolean {
  return objectOf(value).kind === 'KafkaSource'
}

/** A PingSource: its `spec` is the defaulted PingSourceSpec. */
export function isPingSource(object: StoredObject): object is StoredPingSource
export function isPingSource(entry: StoredEntry): entry is StoredEntry<StoredPingSource>
export function isPingSource(value: StoredEntry | StoredObject): boolean {
  return objectOf(value).kind === 'PingSource'
}

/** A source of either kind. */
export function isSource(object: StoredObject): object is StoredSource
export function isSource(entry: StoredEntry): entry is StoredEntry<StoredSource>
export function isSource(value: StoredEntry | StoredObject): boolean {
  const { kind } = objectOf(value)
  return kind === 'KafkaSource' || kind === 'PingSource'
}

/** A Dispatcher: its `spec` says whether it is cordoned. */
export function isDispatcher(object: StoredObject): object is StoredDispatcher
export function isDispatcher(entry: StoredEntry): entry is StoredEntry<StoredDispatcher>
export function isDispatcher(value: StoredEntry | StoredObject): boolean {
  return objectOf(value).kind === 'Dispatcher'
}

/** A Secret: its `spec` holds its key names and its values sealed. */
export function isSealedSecret(object: StoredObject): object is StoredSecret
export function isSealedSecret(entry: StoredEntry): entry is StoredEntry<StoredSecret>
export function isSealedSecret(value: StoredEntry | StoredObject): boolean {
  return objectOf(value).kind === 'Secret'
}

/**
 * The object of a record of the resources topic (`{ object }`), with the defaults of its kind applied: every
 * reader of that topic decodes through here, so a record written without a defaulted field reads as it would
 * have been stored today. Undefined for a value that holds no object (a malformed record, which readers skip).
 */
export function storedObjectOf(value: unknown): StoredObject | undefined {
  const object = isRecord(value) ? value['object'] : undefined
  if (!isRecord(object) || typeof object['kind'] !== 'string' || !isRecord(object['metadata'])) return undefined
  return withStoredDefaults(object as unknown as StoredObject)
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
