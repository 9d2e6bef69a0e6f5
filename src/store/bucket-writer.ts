import { randomUUID } from 'node:crypto'
import { KafkaProducer, kafkaClientOptions } from '../kafka/index.ts'
import { withStoredDefaults } from '../api/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { KafkaConnection, LogTailer } from '../kafka/index.ts'
import { appendInTransaction } from './append.ts'
import { encodeValue } from './codec.ts'
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

/** Most writes one transaction carries: a bucket's queue is drained in transactions of up to this many. */
const MAX_BATCH_WRITES = 128
/** Most bytes of values one transaction carries (the broker refuses a record batch over 1 MiB by default). */
const MAX_BATCH_BYTES = 512 * 1024

/** A write waiting for its bucket's next transaction. */
interface Queued {
  readonly op: WriteOp
  readonly key: string
  readonly resolve: (result: WriteResult) => void
  readonly reject: (error: unknown) => void
}

/** A write checked against the bucket: nothing to append, or its records and its result once they have offsets. */
type Plan =
  | { readonly kind: 'done'; readonly result: WriteResult }
  | {
      readonly kind: 'append'
      readonly messages: ReadonlyArray<{ readonly topic: string; readonly key: string; readonly value: Buffer | null }>
      readonly bytes: number
      /** The result, given the offsets of its messages in the order of `messages`. */
      readonly result: (offsets: readonly bigint[]) => WriteResult
    }

/**
 * The single writer of one bucket. It owns the transactional id `<prefix>-bucket-<n>`: opening it fences
 * any former owner (Kafka bumps the producer epoch and aborts the zombie's open transaction), and every
 * write is a compare-and-set against the bucket read up to its last stable offset, appended in one
 * transaction with the resource's status.
 *
 * Writes that arrive while a transaction is on its way wait, and the next transaction carries all of them
 * (group commit): each is checked in arrival order against the bucket as it was read before that transaction,
 * so two writes to one resource never share a transaction — the second waits for the next one and sees the
 * first. A refused write (conflict, not found) refuses only itself; a transaction that fails fails the writes
 * it carried, each with the same retriable error.
 */
export class BucketWriter {
  readonly bucket: number
  readonly #options: BucketWriterOptions
  readonly #producer: KafkaProducer
  readonly #waiting: Queued[] = []
  #draining = false
  #drained: Promise<void> = Promise.resolve()
  #state: 'opening' | 'ready' | 'fenced' | 'closed' = 'opening'
  readonly #opened: Promise<void>

  constructor(options: BucketWriterOptions) {
    this.bucket = options.bucket
    this.#options = options
    this.#producer = new KafkaProducer({
      ...kafkaClientOptions(
        `${options.connection.clientId}-bucket-${options.bucket}`,
        options.connection.brokers,
        'request'
      ),
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

  /** Applies one write; writes to a bucket are checked in arrival order. */
  write(op: WriteOp): Promise<WriteResult> {
    const key = op.kind === 'create' || op.kind === 'update' ? keyOfNew(op.object) : op.key
    return new Promise((resolve, reject) => {
      this.#waiting.push({ op, key, resolve, reject })
      if (!this.#draining) {
        this.#draining = true
        this.#drained = this.#drain()
      }
    })
  }

  async close(): Promise<void> {
    this.#state = 'closed'
    await this.#drained
    await this.#producer.close(true).catch(() => undefined)
  }

  async #drain(): Promise<void> {
    try {
      while (this.#waiting.length > 0) await this.#writeBatch(this.#waiting.splice(0, MAX_BATCH_WRITES))
    } finally {
      // No await between the loop's last look at the queue and this: a write arriving later starts a new drain.
      this.#draining = false
    }
  }

  /** One transaction for as many of `taken` as can share it; the others go back to the head of the queue. */
  async #writeBatch(taken: Queued[]): Promise<void> {
    try {
      await this.#opened
      if (this.#state !== 'ready') {
        throw new ShoalError(ErrorCodes.UNAVAILABLE, `bucket ${this.bucket} is no longer written by this replica`, {
          retriable: true
        })
      }
      await this.#catchUp()
    } catch (error) {
      for (const queued of taken) queued.reject(error)
      return
    }
    const now = (this.#options.now ?? (() => new Date()))()
    const batch: Array<{ queued: Queued; plan: Extract<Plan, { kind: 'append' }> }> = []
    const touched = new Set<string>()
    let bytes = 0
    for (let i = 0; i < taken.length; i++) {
      const queued = taken[i]!
      if (touched.has(queued.key)) {
        this.#waiting.unshift(...taken.slice(i))
        break
      }
      let plan: Plan
      try {
        plan = this.#plan(queued.op, queued.key, now)
      } catch (error) {
        queued.reject(error)
        continue
      }
      if (plan.kind === 'done') {
        queued.resolve(plan.result)
        continue
      }
      if (batch.length > 0 && bytes + plan.bytes > MAX_BATCH_BYTES) {
        this.#waiting.unshift(...taken.slice(i))
        break
      }
      touched.add(queued.key)
      bytes += plan.bytes
      batch.push({ queued, plan })
    }
    if (batch.length === 0) return
    let offsets: bigint[]
    try {
      offsets = await this.#transact(batch.flatMap(({ plan }) => plan.messages))
    } catch (error) {
      for (const { queued } of batch) queued.reject(error)
      return
    }
    let at = 0
    for (const { queued, plan } of batch) {
      const own = offsets.slice(at, at + plan.messages.length)
      at += plan.messages.length
      try {
        queued.resolve(plan.result(own))
      } catch (error) {
        queued.reject(error)
      }
    }
  }

  /** Checks `op` against the bucket as read; throws a ShoalError to refuse it. */
  #plan(op: WriteOp, key: string, now: Date): Plan {
    const { view, names } = this.#options
    const current = view.get(key)

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
      const deleted = current!
      return {
        kind: 'append',
        messages: [
          { topic: names.resourcesTopic, key, value: null },
          { topic: names.statusTopic, key, value: null }
        ],
        bytes: 2 * key.length,
        result: () => ({ kind: 'deleted', entry: deleted })
      }
    }

    const object = op.kind === 'status' ? current!.object : this.#desired(op, current, now)
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
      return { kind: 'done', result: { kind: 'written', entry: current } }
    }
    const messages = [{ topic: names.statusTopic, key, value: encodeValue({ status }) }]
    if (op.kind !== 'status') messages.unshift({ topic: names.resourcesTopic, key, value: encodeValue({ object }) })
    return {
      kind: 'append',
      messages,
      bytes: messages.reduce((n, m) => n + m.key.length + m.value.length, 0),
      result: offsets => {
        // A status write keeps the resource's version; any other write's version is its resource record's offset.
        const resourceVersion = op.kind === 'status' ? current!.resourceVersion : String(offsets[0])
        const entry: StoredEntry = {
          key,
          bucket: this.bucket,
          resourceVersion,
          object: { ...object, metadata: { ...object.metadata, resourceVersion } },
          status
        }
        return { kind: 'written', entry }
      }
    }
  }

  /** The object a create or an update writes: server-side metadata kept from `current`, then finalized. */
  #desired(
    op: Extract<WriteOp, { kind: 'create' | 'update' }>,
    current: StoredEntry | undefined,
    now: Date
  ): StoredObject {
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
    // The kind's defaults come after finalize, which keeps a stored consumer group a replacement leaves out.
    const finalized = withStoredDefaults(
      this.#options.finalize ? this.#options.finalize(draft, current?.object) : draft
    )
    // The generation moves only when the desired state (spec) does, as in Kubernetes.
    const specChanged = base !== undefined && !sameJson(current!.object.spec, finalized.spec)
    return specChanged
      ? { ...finalized, metadata: { ...finalized.metadata, generation: base.generation + 1 } }
      : finalized
  }

  async #transact(
    messages: ReadonlyArray<{ readonly topic: string; readonly key: string; readonly value: Buffer | null }>
  ): Promise<bigint[]> {
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
  if (typeof api === 'string' || typeof api === 'number') parts.push(String(api))
  return parts.join(': ')
}
