import type {
  DispatcherResource,
  DispatcherSpec,
  KafkaSource,
  KafkaSourceSpec,
  PingSource,
  PingSourceSpec,
  SealedSecretSpec
} from '../api/index.ts'
import type { PlacementsRecord } from './records.ts'

/** Metadata the store keeps for every resource; the server sets uid, generation and creationTimestamp. */
export interface StoredMetadata {
  readonly name: string
  readonly namespace: string
  readonly uid: string
  readonly generation: number
  readonly creationTimestamp: string
  readonly resourceVersion?: string
  readonly labels?: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
}

/**
 * A resource as the store holds it: desired state only; status lives on its own topic. Any kind: narrow it with
 * the guards of stored-kinds.ts (`isKafkaSource`, …) to read its spec.
 */
export interface StoredObject {
  readonly apiVersion: string
  readonly kind: string
  readonly metadata: StoredMetadata
  readonly spec: unknown
}

/** A KafkaSource's spec as stored: defaulted, its consumer group always set (see withStoredDefaults). */
export type StoredKafkaSourceSpec = KafkaSourceSpec & { readonly consumerGroup: string }

/** A stored KafkaSource. */
export interface StoredKafkaSource extends StoredObject {
  readonly apiVersion: KafkaSource['apiVersion']
  readonly kind: 'KafkaSource'
  readonly spec: StoredKafkaSourceSpec
}

/** A stored PingSource. */
export interface StoredPingSource extends StoredObject {
  readonly apiVersion: PingSource['apiVersion']
  readonly kind: 'PingSource'
  readonly spec: PingSourceSpec
}

/** A stored source of either kind. */
export type StoredSource = StoredKafkaSource | StoredPingSource

/** A stored Dispatcher (its desired state: cordoned or not). */
export interface StoredDispatcher extends StoredObject {
  readonly apiVersion: DispatcherResource['apiVersion']
  readonly kind: 'Dispatcher'
  readonly spec: DispatcherSpec
}

/** A stored Secret: its values sealed (src/secrets), never in clear. */
export interface StoredSecret extends StoredObject {
  readonly apiVersion: 'v1'
  readonly kind: 'Secret'
  readonly spec: SealedSecretSpec
}

/** A resource with its resourceVersion (the offset of its record in its bucket) and its status. */
export interface StoredEntry<O extends StoredObject = StoredObject> {
  readonly key: string
  readonly bucket: number
  readonly resourceVersion: string
  readonly object: O
  readonly status: unknown
  /** Where the scheduler placed the source, when it has (the leader's `shoal.placements` record). */
  readonly scheduling?: PlacementsRecord
}

/** What a writer asks the bucket owner to do. `expectedVersion` is a compare-and-set precondition. */
export type WriteOp =
  | { readonly kind: 'create'; readonly object: Omit<StoredObject, 'metadata'> & { metadata: NewMetadata } }
  | {
      readonly kind: 'update'
      readonly object: Omit<StoredObject, 'metadata'> & { metadata: NewMetadata }
      readonly expectedVersion?: string
    }
  | { readonly kind: 'delete'; readonly key: string; readonly expectedVersion?: string }
  | { readonly kind: 'status'; readonly key: string; readonly status: unknown; readonly expectedVersion?: string }

/** Metadata as a client sends it; server-set fields are ignored. */
export interface NewMetadata {
  readonly name: string
  readonly namespace: string
  readonly labels?: Readonly<Record<string, string>>
  readonly annotations?: Readonly<Record<string, string>>
}

export type WriteResult =
  { readonly kind: 'written'; readonly entry: StoredEntry } | { readonly kind: 'deleted'; readonly entry: StoredEntry }

/** Who writes a bucket right now, as this replica knows it. */
export type BucketOwner =
  | { readonly kind: 'self' }
  | { readonly kind: 'remote'; readonly replicaId: string; readonly url: string }
  | { readonly kind: 'unknown' }

/** One controller replica as it announces itself on the controllers topic. */
export interface ControllerRecord {
  readonly replicaId: string
  readonly url: string
  readonly generation: number
  readonly buckets: readonly number[]
  readonly since: string
}
