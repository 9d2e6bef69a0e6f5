import { randomUUID } from 'node:crypto'
import { Producer } from '@platformatic/kafka'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { KafkaConnection, LogTailer } from '../kafka/index.ts'
import { appendInTransaction } from './append.ts'
import type { StoreNames } from './names.ts'
import type { ResourceView } from './resource-view.ts'
import type { NewMetadata, StoredEntry, StoredObject, WriteOp, WriteResult } from './types.ts'

/** Computes a resource's status when its desired state is written; `previous` is the status it had. */
export type StatusOf = (object: StoredObject, previous: unknown) => unknown

/**
 * Fills server-side defaults of a resource once its uid is known, and checks a replacement against the
 * stored object (`previous`); throws a ShoalError to refuse it.
 */
export type Finalize = (object: StoredObject, previous: StoredObject | undefined) => StoredObject

export interface BucketWriterOptions {
  readonly connection: KafkaConnection
  readonly names: StoreNames
  readonly bucket: number
  readonly tailer: LogTailer
  readonly view: ResourceView
  readonly statusOf: StatusOf
  /** Server-side defaults that need the server-set fields (uid), applied before the spec is compared. */
  readonly finalize?: Finalize
  readonly now?: () => Date
}

/**
 * The single writer of one bucket. It owns the transactional id `<prefix>-bucket-<n>`: opening it fences
 * any former owner (Kafka bumps the producer epoch and aborts the zombie's open transaction), and every
 * write is a compare-and-set against the bucket read up to its last stable offset, appended in one
 * transaction with the resource's status.
 */
export class BucketWriter {
  readonly bucket: number
  readonly #options: BucketWriterOptions
  readonly #producer: Producer
  #queue: Promise<unknown> = Promise.resolve()
  #state: 'opening' | 'ready' | 'fenced' | 'closed' = 'opening'
  readonly #opened: Promise<void>

  constructor(options: BucketWriterOptions) {
    this.bucket = options.bucket
    this.#options = options
    this.#producer = new Producer({
      clientId: `${options.connection.clientId}-bucket-${options.bucket}`,
      bootstrapBrokers: [...options.connection.brokers],
      transactionalId: options.names.bucketTransactionalId(options.bucket),
      idempotent: true,
      acks: -1,
      retries: 5,
      retryDelay: 200
    })
    this.#opened = this.#open()
    this.#opened.catch(() => undefined)
  }

  get state(): string {
    return this.#state
  }

  /** Resolves when the writer has fenced former owners and read its bucket; rejects if it could not. */
  get opened(): Promise<void> {
    return this.#opened
  }

  async #open(): Promise<void> {
    // InitProducerId happens on the first transaction: that is the fencing step. It must ask for a new
    // producer id (-1/-1); the client's default of 0/0 reads to the broker as "bump epoch 0 of producer 0",
    // which it refuses once another process has used the transactional id.
    const tx = await this.#producer.beginTransaction({ producerId: -1n, producerEpoch: -1 })
    await tx.cancel()
    await this.#catchUp()
    if (this.#state === 'opening') this.#state = 'ready'
  }

  #catchUp(): Promise<void> {
    const partitions = [this.bucket]
    return this.#options.tailer.barrier([
      { topic: this.#options.names.resourcesTopic, partitions },
      { topic: this.#options.names.statusTopic, partitions }
    ])
  }

  /** Applies one write; writes to a bucket happen one at a time, in arrival order. */
  write(op: WriteOp): Promise<WriteResult> {
    const run = this.#queue.then(() => this.#write(op))
    this.#queue = run.catch(() => undefined)
    return run
  }

  async close(): Promise<void> {
    this.#state = 'closed'
    await this.#queue
    await this.#producer.close(true).catch(() => undefined)
  }

  async #write(op: WriteOp): Promise<WriteResult> {
    await this.#opened
    if (this.#state !== 'ready') {
      throw new ShoalError(ErrorCodes.UNAVAILABLE, `bucket ${this.bucket} is no longer written by this replica`, {
        retriable: true
      })
    }
    await this.#catchUp()
    const { view, names } = this.#options
    const key = op.kind === 'create' || op.kind === 'update' ? keyOfNew(op.object) : op.key
    const current = view.get(key)
    const now = (this.#options.now ?? (() => new Date()))()

    if (op.kind === 'create' && current) {
      throw new ShoalError(ErrorCodes.CONFLICT, `${describeKey(key)} already exists`, { fields: [] })
    }
    if (op.kind !== 'create') {
      if (!current) throw new ShoalError(ErrorCodes.NOT_FOUND, `${describeKey(key)} not found`)
      if (op.expectedVersion !== undefined && op.expectedVersion !== current.resourceVersion) {
        throw new ShoalError(
          ErrorCodes.CONFLICT,
          `${describeKey(key)} was modified: resourceVersion ${op.expectedVersion} is stale (now ${current.resourceVersion}); read it again and retry`
        )
      }
    }

    if (op.kind === 'delete') {
      await this.#transact([
        { topic: names.resourcesTopic, key, value: null },
        { topic: names.statusTopic, key, value: null }
      ])
      return { kind: 'deleted', entry: current! }
    }

    let object: StoredObject
    if (op.kind === 'status') {
      object = current!.object
    } else {
      const base = current?.object.metadata
      const draft: StoredObject = {
        apiVersion: op.object.apiVersion,
        kind: op.object.kind,
        metadata: {
          name: op.object.metadata.name,
          namespace: op.object.metadata.namespace,
          uid: base?.uid ?? randomUUID(),
          generation: base?.generation ?? 1,
          creationTimestamp: base?.creationTimestamp ?? now.toISOString(),
          ...(op.object.metadata.labels ? { labels: op.object.metadata.labels } : {}),
          ...(op.object.metadata.annotations ? { annotations: op.object.metadata.annotations } : {})
        },
        spec: op.object.spec
      }
      const finalized = this.#options.finalize ? this.#options.finalize(draft, current?.object) : draft
      // The generation moves only when the desired state (spec) does, as in Kubernetes.
      const specChanged = base !== undefined && !sameJson(current!.object.spec, finalized.spec)
      object = specChanged
        ? { ...finalized, metadata: { ...finalized.metadata, generation: base.generation + 1 } }
        : finalized
    }
    const status = op.kind === 'status' ? op.status : this.#options.statusOf(object, current?.status)
    if (
      current &&
      op.kind !== 'status' &&
      sameJson(current.object, {
        ...object,
        metadata: { ...object.metadata, resourceVersion: current.resourceVersion }
      }) &&
      sameJson(current.status, status)
    ) {
      // Nothing changed: no record, and the resourceVersion stays (repeated applies are free).
      return { kind: 'written', entry: current }
    }
    const messages = [{ topic: names.statusTopic, key, value: { status } }]
    if (op.kind !== 'status') messages.unshift({ topic: names.resourcesTopic, key, value: { object } as never })
    const offsets = await this.#transact(messages)
    const resourceVersion =
      op.kind === 'status' ? current!.resourceVersion : String(offsets.get(names.resourcesTopic) ?? '')
    const entry: StoredEntry = {
      key,
      bucket: this.bucket,
      resourceVersion,
      object: { ...object, metadata: { ...object.metadata, resourceVersion } },
      status
    }
    return { kind: 'written', entry }
  }

  async #transact(messages: Array<{ topic: string; key: string; value: unknown }>): Promise<Map<string, bigint>> {
    try {
      return await appendInTransaction(
        this.#producer,
        messages.map(m => ({ ...m, partition: this.bucket }))
      )
    } catch (error) {
      if (isFencing(error)) {
        this.#state = 'fenced'
        throw new ShoalError(ErrorCodes.FENCED, `bucket ${this.bucket} was taken over by another replica`, {
          cause: error,
          retriable: true
        })
      }
      throw new ShoalError(ErrorCodes.UNAVAILABLE, `could not append to bucket ${this.bucket}: ${errorText(error)}`, {
        cause: error,
        retriable: true
      })
    }
  }
}

/** Equality of JSON values regardless of key order. */
function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a, sortedKeys) === JSON.stringify(b, sortedKeys)
}

function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  return Object.fromEntries(Object.entries(value).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
}

function keyOfNew(object: { kind: string; metadata: NewMetadata }): string {
  return `${object.kind}/${object.metadata.namespace}/${object.metadata.name}`
}

function describeKey(key: string): string {
  const [kind, namespace, name] = key.split('/')
  return `${kind} ${namespace}/${name}`
}

/** Kafka's answers to a producer whose epoch was bumped by a newer owner of its transactional id. */
export function isFencing(error: unknown): boolean {
  return /PRODUCER_FENCED|INVALID_PRODUCER_EPOCH|fenced/i.test(errorText(error))
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const parts = [error.message]
  const nested = (error as { errors?: unknown[] }).errors
  if (Array.isArray(nested)) for (const e of nested) parts.push(errorText(e))
  if (error.cause) parts.push(errorText(error.cause))
  const api = (error as { apiId?: unknown }).apiId
  if (api) parts.push(String(api))
  return parts.join(': ')
}
