import { KafkaProducer, LogTailer, ensureTopics, kafkaClientOptions } from '../kafka/index.ts'
import { ErrorCodes, ShoalError, isShoalError } from '../errors/index.ts'
import type { KafkaConnection, LogRecord } from '../kafka/index.ts'
import { bucketOf } from './bucket-of.ts'
import { BucketWriter } from './bucket-writer.ts'
import type { Finalize, StatusOf } from './bucket-writer.ts'
import { encodeValue, schemaHeaders } from './codec.ts'
import { Membership } from './membership.ts'
import type { Assignment } from './membership.ts'
import { storeNames } from './names.ts'
import type { StoreNames } from './names.ts'
import { ResourceView } from './resource-view.ts'
import type { BucketOwner, ControllerRecord, StoredEntry, WriteOp, WriteResult } from './types.ts'
import type { Log } from '../log/index.ts'

export const DEFAULT_BUCKETS = 16

/**
 * How long a read waits for transactions still open in its buckets. They normally close within
 * milliseconds; one left open by a crashed owner closes when the new owner takes the bucket over.
 */
const READ_BARRIER_TIMEOUT_MS = 3_000

export interface ResourceStoreOptions {
  readonly connection: KafkaConnection
  readonly prefix?: string
  /** Number of buckets; fixed when the topics are first created. */
  readonly buckets?: number
  /** This replica's stable name and the URL other replicas forward writes to. */
  readonly replicaId: string
  readonly url: string
  readonly statusOf: StatusOf
  readonly finalize?: Finalize
  readonly sessionTimeoutMs?: number
  readonly log?: Log
  /** Makes a bucket's writer (default `new BucketWriter`); a test gives one that fails to open. */
  readonly openWriter?: (options: ConstructorParameters<typeof BucketWriter>[0]) => BucketWriter
}

/** Hands a write to the replica at `url`, which owns its bucket (the API server forwards it over HTTP). */
export type ForwardWrite = (url: string, op: WriteOp) => Promise<WriteResult>

/** Waits before asking again who owns a bucket whose ownership is moving: 25 ms, doubling, at most 0.5 s. */
function ownerRetryDelay(attempt: number): number {
  return Math.min(500, 25 * 2 ** attempt)
}

/** How often a forwarded write looks whether its bucket's owner changed. */
const OWNER_CHECK_MS = 250

/** Waits before trying again to take over a bucket whose writer could not open: 0.5 s, doubling, at most 5 s. */
function takeOverDelay(attempt: number): number {
  return Math.min(5_000, 500 * 2 ** attempt)
}

/**
 * The resource store on the Kafka log (DESIGN §4). Every replica reads every bucket; each bucket is
 * written only by the replica the controllers' consumer group assigned it to, through a fenced
 * transactional producer. Reads wait until the replica has read up to the log's last stable offset, so a
 * client sees its own writes whichever replica it asks.
 */
export class ResourceStore {
  readonly names: StoreNames
  readonly buckets: number
  readonly replicaId: string
  readonly #options: ResourceStoreOptions
  readonly #view: ResourceView
  readonly #tailer: LogTailer
  readonly #membership: Membership
  readonly #writers = new Map<number, BucketWriter>()
  readonly #announcer: KafkaProducer
  #assignment: Assignment = { generation: -1, buckets: [] }
  readonly #assignmentListeners = new Set<(assignment: Assignment) => void>()
  #closed = false

  private constructor(options: ResourceStoreOptions) {
    this.#options = options
    this.names = storeNames(options.prefix)
    this.buckets = options.buckets ?? DEFAULT_BUCKETS
    this.replicaId = options.replicaId
    const log = options.log ?? (() => undefined)
    this.#view = new ResourceView(
      {
        resources: this.names.resourcesTopic,
        status: this.names.statusTopic,
        controllers: this.names.controllersTopic,
        placements: this.names.placementsTopic
      },
      (record: LogRecord, reason: string) =>
        log('warn', 'skipping unreadable record', { topic: record.topic, offset: String(record.offset), reason })
    )
    this.#tailer = new LogTailer({
      connection: options.connection,
      topics: [
        this.names.resourcesTopic,
        this.names.statusTopic,
        this.names.controllersTopic,
        this.names.placementsTopic
      ],
      onRecord: record => this.#view.apply(record),
      onError: error => log('warn', 'reading the store failed; retrying', { error: String(error) })
    })
    this.#membership = new Membership({
      connection: options.connection,
      names: this.names,
      ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: options.sessionTimeoutMs })
    })
    this.#membership.on('assignment', assignment => this.#onAssignment(assignment))
    this.#membership.on('error', error => log('warn', 'controller group error', { error: String(error) }))
    this.#announcer = new KafkaProducer({
      ...kafkaClientOptions(`${options.connection.clientId}-announcer`, options.connection.brokers, 'request'),
      acks: -1,
      retries: 5,
      retryDelay: 200
    })
  }

  /** Creates the internal topics if needed, reads the store, and joins the controllers' group. */
  static async open(options: ResourceStoreOptions): Promise<ResourceStore> {
    const store = new ResourceStore(options)
    await ensureTopics(options.connection, storeTopics(store.names, store.buckets))
    await store.#tailer.start()
    await store.#tailer.barrier([{ topic: store.names.resourcesTopic }, { topic: store.names.statusTopic }])
    await store.#membership.start()
    return store
  }

  /** Leaves the group (so the others take over at once) and closes every client. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#membership.stop()
    await Promise.all([...this.#writers.values()].map(w => w.close()))
    this.#writers.clear()
    await this.#announce({ kind: 'leave' }).catch(() => undefined)
    await this.#announcer.close(true).catch(() => undefined)
    await this.#tailer.close()
  }

  bucketOf(key: string): number {
    return bucketOf(key, this.buckets)
  }

  get assignment(): Assignment {
    return this.#assignment
  }

  /** True when this replica owns bucket 0: it runs the scheduler and the autoscalers. */
  get isLeader(): boolean {
    return this.#assignment.buckets.includes(0)
  }

  ownerOf(bucket: number): BucketOwner {
    if (this.#writers.has(bucket)) return { kind: 'self' }
    const claim = this.#view.claimOf(bucket)
    if (claim && claim.replicaId !== this.replicaId)
      return { kind: 'remote', replicaId: claim.replicaId, url: claim.url }
    return { kind: 'unknown' }
  }

  controllers(): ControllerRecord[] {
    return this.#view.controllers()
  }

  /** This replica's copy of the resources, as of now (no barrier): for the scheduler leader. */
  snapshot(predicate?: (key: string) => boolean): StoredEntry[] {
    return this.#view.list(predicate)
  }

  /** Calls `listener` with the key of every resource created, changed or deleted from now on. */
  onResource(listener: (key: string) => void): () => void {
    return this.#view.onResource(listener)
  }

  /** One resource from this replica's copy, as of now (no barrier). */
  peek(key: string): StoredEntry | undefined {
    return this.#view.get(key)
  }

  /** Calls `listener` after every rebalance of the controllers' group, with this replica's new buckets. */
  onAssignment(listener: (assignment: Assignment) => void): void {
    this.#assignmentListeners.add(listener)
  }

  offAssignment(listener: (assignment: Assignment) => void): void {
    this.#assignmentListeners.delete(listener)
  }

  async get(key: string): Promise<StoredEntry | undefined> {
    const bucket = this.bucketOf(key)
    await this.#tailer.barrier(
      [
        { topic: this.names.resourcesTopic, partitions: [bucket] },
        { topic: this.names.statusTopic, partitions: [bucket] },
        { topic: this.names.placementsTopic, partitions: [bucket] }
      ],
      { timeoutMs: READ_BARRIER_TIMEOUT_MS }
    )
    return this.#view.get(key)
  }

  async list(predicate?: (key: string) => boolean): Promise<StoredEntry[]> {
    await this.#tailer.barrier(
      [{ topic: this.names.resourcesTopic }, { topic: this.names.statusTopic }, { topic: this.names.placementsTopic }],
      { timeoutMs: READ_BARRIER_TIMEOUT_MS }
    )
    return this.#view.list(predicate)
  }

  /**
   * Applies a write on its bucket's owner: this replica, or the one `forward` reaches (absent: the write was
   * itself forwarded here, and is not passed on again). Tried again while the bucket's ownership moves (a
   * rebalance) and the failure is retriable, until `timeoutMs` has passed.
   */
  async writeAtOwner(op: WriteOp, timeoutMs: number, forward?: ForwardWrite): Promise<WriteResult> {
    const deadline = Date.now() + timeoutMs
    const bucket = this.bucketOf(keyOf(op))
    for (let attempt = 0; ; attempt++) {
      const owner = this.ownerOf(bucket)
      try {
        if (owner.kind === 'self') return await this.write(op)
        if (owner.kind === 'remote' && forward !== undefined)
          return await this.#forwardWhileOwner(bucket, owner, op, forward)
        throw new ShoalError(
          ErrorCodes.UNAVAILABLE,
          `no controller owns bucket ${bucket} right now (rebalance in progress); retry`,
          { retriable: true }
        )
      } catch (error) {
        if (!isShoalError(error) || !error.retriable || Date.now() >= deadline) throw error
        await new Promise(resolve => setTimeout(resolve, ownerRetryDelay(attempt)))
      }
    }
  }

  /**
   * Forwards a write to the bucket's owner, until the owner changes: then it fails (retriable), to be tried at the new
   * owner. An owner lost with its zone answers nothing; its write waited out the forward's 10 s while the group had
   * given the bucket to another replica after its session timeout (the lab's broker zone loss: the store answered
   * after 13–14 s). The forward left behind is as a timed-out one: if the lost owner did apply it, the retry meets
   * what it wrote (a conflict), as after any write whose answer was lost.
   */
  async #forwardWhileOwner(
    bucket: number,
    owner: { readonly replicaId: string; readonly url: string },
    op: WriteOp,
    forward: ForwardWrite
  ): Promise<WriteResult> {
    const forwarded = forward(owner.url, op)
    let timer: NodeJS.Timeout | undefined
    const moved = new Promise<never>((_, reject) => {
      timer = setInterval(() => {
        const now = this.ownerOf(bucket)
        if (now.kind === 'remote' && now.replicaId === owner.replicaId) return
        reject(
          new ShoalError(
            ErrorCodes.UNAVAILABLE,
            `bucket ${bucket} moved from ${owner.replicaId} during the write; retry`,
            {
              retriable: true
            }
          )
        )
      }, OWNER_CHECK_MS)
    })
    try {
      return await Promise.race([forwarded, moved])
    } finally {
      clearInterval(timer)
      forwarded.catch(() => undefined)
    }
  }

  /** Applies a write on this replica, which must own the key's bucket. */
  async write(op: WriteOp): Promise<WriteResult> {
    const key = keyOf(op)
    const writer = this.#writers.get(this.bucketOf(key))
    if (!writer) {
      throw new ShoalError(ErrorCodes.UNAVAILABLE, `this replica does not own the bucket of ${key}`, {
        retriable: true
      })
    }
    // A writer can be fenced after the assignment that kept it (this replica paused past its session and given
    // the bucket back on waking, its writer fenced by the owner of the generation it missed): while the bucket is
    // still this replica's, it is opened again, or no write to it would succeed until the next rebalance.
    return writer.write(op).catch((error: unknown) => {
      const bucket = this.bucketOf(key)
      if (writer.state === 'fenced' && this.#writers.get(bucket) === writer) {
        this.#writers.delete(bucket)
        void writer.close()
        setTimeout(() => {
          if (this.#closed || this.#writers.has(bucket) || !this.#assignment.buckets.includes(bucket)) return
          this.#takeOver(bucket, 0)
        }, takeOverDelay(1)).unref()
      }
      throw error
    })
  }

  #onAssignment(assignment: Assignment): void {
    if (this.#closed) return
    const log = this.#options.log ?? (() => undefined)
    const previous = this.#assignment
    this.#assignment = assignment
    const owned = new Set(assignment.buckets)
    for (const [bucket, writer] of this.#writers) {
      // A writer that was fenced is replaced even if the bucket came back to us.
      if (!owned.has(bucket) || writer.state === 'fenced') {
        this.#writers.delete(bucket)
        void writer.close()
      }
    }
    for (const bucket of owned) {
      if (!this.#writers.has(bucket)) this.#takeOver(bucket, 0)
    }
    log('info', 'buckets assigned', {
      generation: assignment.generation,
      buckets: assignment.buckets,
      leader: owned.has(0),
      previous: previous.buckets
    })
    for (const listener of this.#assignmentListeners) listener(assignment)
    void this.#announce({ kind: 'join', assignment }).catch(error =>
      log('warn', 'could not announce buckets', { error: String(error) })
    )
  }

  /**
   * Opens the bucket's writer (which fences its former owner). One that cannot open — the transaction
   * coordinator loading or moving, a broker unreachable — is tried again while this replica still owns the
   * bucket: without a writer no replica accepts the bucket's writes until the next rebalance.
   */
  #takeOver(bucket: number, attempt: number): void {
    const log = this.#options.log ?? (() => undefined)
    const options = {
      connection: this.#options.connection,
      names: this.names,
      bucket,
      tailer: this.#tailer,
      view: this.#view,
      statusOf: this.#options.statusOf,
      ...(this.#options.finalize ? { finalize: this.#options.finalize } : {})
    }
    const writer = this.#options.openWriter?.(options) ?? new BucketWriter(options)
    this.#writers.set(bucket, writer)
    const startedAt = Date.now()
    writer.opened.then(
      () => log('info', 'bucket taken over', { bucket, attempt, ms: Date.now() - startedAt }),
      error => {
        if (this.#writers.get(bucket) !== writer) return
        this.#writers.delete(bucket)
        void writer.close()
        const delayMs = takeOverDelay(attempt)
        log('error', 'could not take over a bucket; trying again', { bucket, error: String(error), attempt, delayMs })
        setTimeout(() => {
          if (this.#closed || this.#writers.has(bucket) || !this.#assignment.buckets.includes(bucket)) return
          this.#takeOver(bucket, attempt + 1)
        }, delayMs).unref()
      }
    )
  }

  async #announce(what: { kind: 'join'; assignment: Assignment } | { kind: 'leave' }): Promise<void> {
    const record: ControllerRecord | null =
      what.kind === 'leave'
        ? null
        : {
            replicaId: this.replicaId,
            url: this.#options.url,
            generation: what.assignment.generation,
            buckets: what.assignment.buckets,
            since: new Date().toISOString()
          }
    await this.#announcer.send({
      // The client ignores the producer's own `acks` option unless it is idempotent: give it on every send.
      acks: -1,
      messages: [
        {
          topic: this.names.controllersTopic,
          partition: 0,
          key: Buffer.from(this.replicaId),
          value: record === null ? (null as unknown as Buffer) : encodeValue(record),
          headers: schemaHeaders()
        }
      ]
    })
  }
}

function keyOf(op: WriteOp): string {
  return op.kind === 'create' || op.kind === 'update'
    ? `${op.object.kind}/${op.object.metadata.namespace}/${op.object.metadata.name}`
    : op.key
}

const compacted = { 'cleanup.policy': 'compact' }

/** The internal topics and their settings (DESIGN §4). */
export function storeTopics(names: StoreNames, buckets: number) {
  return [
    { name: names.resourcesTopic, partitions: buckets, configs: compacted },
    { name: names.statusTopic, partitions: buckets, configs: compacted },
    { name: names.placementsTopic, partitions: buckets, configs: compacted },
    { name: names.contractsTopic, partitions: buckets, configs: compacted },
    // Heartbeats are judged by the broker's clock, not the sender's: the broker stamps each record.
    { name: names.membersTopic, partitions: 1, configs: { ...compacted, 'message.timestamp.type': 'LogAppendTime' } },
    { name: names.controllersTopic, partitions: 1, configs: compacted },
    { name: names.deliveryErrorsTopic, partitions: 1, configs: compacted }
  ]
}
