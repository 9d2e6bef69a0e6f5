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

/** A resource as the store holds it: desired state only; status lives on its own topic. */
export interface StoredObject {
  readonly apiVersion: string
  readonly kind: string
  readonly metadata: StoredMetadata
  readonly spec: unknown
}

/** A resource with its resourceVersion (the offset of its record in its bucket) and its status. */
export interface StoredEntry {
  readonly key: string
  readonly bucket: number
  readonly resourceVersion: string
  readonly object: StoredObject
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
