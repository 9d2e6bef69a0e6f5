import { KafkaProducer, LogTailer, kafkaClientOptions } from '../kafka/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import { appendInTransaction, contractPartitionOf, decodeValue } from '../store/index.ts'
import type { ContractRecord, LogAppend, PlacementsRecord, ResourceStore } from '../store/index.ts'
import type { LeaderWrite } from './leader-writes.ts'

/**
 * A term's hold on `<prefix>.placements` and `<prefix>.contracts`: the transactional id `<prefix>-scheduler`
 * (taking it fences a deposed leader), what the log says now, and the highest epoch in it.
 */
export class TermLog {
  /** The placements record per source and the contract record per (dispatcher, source), as the log holds them. */
  readonly placements = new Map<string, PlacementsRecord>()
  readonly contracts = new Map<string, ContractRecord>()
  /**
   * Contracts the log withdrew (a tombstone), by key: the dispatcher that held it and the tombstone's offset in its
   * contract partition. Once a dispatcher has applied its partition past that offset it no longer runs the source.
   */
  readonly withdrawn = new Map<string, { readonly dispatcher: string; readonly offset: bigint }>()
  readonly #store: ResourceStore
  readonly #producer: KafkaProducer
  readonly #tailer: LogTailer
  #epoch = 0
  #opened = false

  /**
   * `onSuperseded`: once open, the log holds a record of a later term — another leader took over. Its appends are
   * fenced too, but a term with nothing to append would never find out.
   */
  constructor(connection: KafkaConnection, store: ResourceStore, onSuperseded?: (epoch: number) => void) {
    this.#store = store
    const names = store.names
    this.#producer = new KafkaProducer({
      ...kafkaClientOptions(`${connection.clientId}-scheduler`, connection.brokers, 'request'),
      transactionalId: names.schedulerTransactionalId,
      idempotent: true,
      acks: -1,
      retries: 5,
      retryDelay: 200
    })
    this.#tailer = new LogTailer({
      connection: { ...connection, clientId: `${connection.clientId}-scheduler-log` },
      topics: [names.placementsTopic, names.contractsTopic],
      onRecord: record => {
        const key = record.key?.toString('utf8')
        if (key === undefined) return
        const decoded = decodeValue(record.value, record.headers)
        const map = record.topic === names.placementsTopic ? this.placements : this.contracts
        if (decoded.kind === 'tombstone') {
          const held = this.contracts.get(key)
          if (map === this.contracts && held !== undefined) {
            this.withdrawn.set(key, { dispatcher: held.dispatcher, offset: record.offset })
          }
          map.delete(key)
        } else if (decoded.kind === 'value') {
          if (map === this.contracts) this.withdrawn.delete(key)
          const value = decoded.value as PlacementsRecord & ContractRecord
          // A contract as the leader keeps it names the offset that gave its dispatcher the source.
          map.set(
            key,
            map === this.contracts ? { ...value, heldSince: value.heldSince ?? String(record.offset) } : value
          )
          if (!this.#opened) this.#epoch = Math.max(this.#epoch, value.epoch)
          else if (value.epoch > this.#epoch) onSuperseded?.(value.epoch)
        }
      }
    })
  }

  /** This term's epoch once opened: one above the highest in the log. */
  get epoch(): number {
    return this.#epoch
  }

  /** Takes the transactional id, then reads both topics to their end. */
  async open(): Promise<void> {
    // Fence a deposed leader first: after this no older leader can append, so the log read next is final.
    const tx = await this.#producer.beginTransaction({ producerId: -1n, producerEpoch: -1 })
    await tx.cancel()
    await this.#tailer.start()
    const names = this.#store.names
    await this.#tailer.barrier([{ topic: names.placementsTopic }, { topic: names.contractsTopic }])
    this.#epoch += 1
    this.#opened = true
  }

  /** Appends `writes` in one transaction (a fenced term's append throws: see isFencing), then holds them as the log's. */
  async append(writes: readonly LeaderWrite[]): Promise<void> {
    if (writes.length === 0) return
    const offsets = await appendInTransaction(
      this.#producer,
      writes.map(w => this.#messageOf(w))
    )
    const nextPlacements = new Map<string, PlacementsRecord | null>()
    const nextContracts = new Map<string, ContractRecord | null>()
    for (const write of writes) {
      if (write.kind === 'placements') nextPlacements.set(write.key, write.record)
      else nextContracts.set(write.key, write.record)
    }
    writes.forEach((write, i) => {
      const written = write.kind === 'contract' ? nextContracts.get(write.key) : undefined
      if (written && written.heldSince === undefined) {
        nextContracts.set(write.key, { ...written, heldSince: String(offsets[i]) })
      }
    })
    applyTo(this.placements, nextPlacements)
    applyTo(this.contracts, nextContracts)
  }

  async close(): Promise<void> {
    await this.#producer.close(true).catch(() => undefined)
    await this.#tailer.close()
  }

  #messageOf(write: LeaderWrite): LogAppend {
    const store = this.#store
    return write.kind === 'placements'
      ? {
          topic: store.names.placementsTopic,
          partition: store.bucketOf(write.key),
          key: write.key,
          value: write.record
        }
      : {
          topic: store.names.contractsTopic,
          partition: contractPartitionOf(write.dispatcher, store.buckets),
          key: write.key,
          value: write.record
        }
  }
}

/** Puts written records into a map of the log's state: null is a tombstone. */
function applyTo<V>(map: Map<string, V>, written: ReadonlyMap<string, V | null>): void {
  for (const [key, value] of written) {
    if (value === null) map.delete(key)
    else map.set(key, value)
  }
}
