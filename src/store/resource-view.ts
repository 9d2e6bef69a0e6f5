import { decodeValue } from './codec.ts'
import { storedObjectOf } from './stored-kinds.ts'
import type { LogRecord } from '../kafka/index.ts'
import type { PlacementsRecord } from './records.ts'
import type { ControllerRecord, StoredEntry, StoredObject } from './types.ts'

interface ResourceSlot {
  readonly bucket: number
  readonly offset: bigint
  readonly object: StoredObject
}

/**
 * The in-memory picture every controller replica builds by reading the store's topics: resources,
 * their status, and which replica owns which bucket. Pure: it only applies records.
 */
export class ResourceView {
  readonly #resources = new Map<string, ResourceSlot>()
  readonly #status = new Map<string, unknown>()
  readonly #controllers = new Map<string, ControllerRecord>()
  readonly #placements = new Map<string, PlacementsRecord>()
  readonly #listeners = new Set<(key: string) => void>()
  readonly #topics: { resources: string; status: string; controllers: string; placements?: string }
  readonly #onUnreadable: (record: LogRecord, reason: string) => void

  constructor(
    topics: { resources: string; status: string; controllers: string; placements?: string },
    onUnreadable: (record: LogRecord, reason: string) => void = () => undefined
  ) {
    this.#topics = topics
    this.#onUnreadable = onUnreadable
  }

  apply(record: LogRecord): void {
    const key = record.key?.toString('utf8')
    if (key === undefined) return
    const decoded = decodeValue(record.value, record.headers)
    if (decoded.kind === 'unreadable') {
      this.#onUnreadable(record, decoded.reason)
      return
    }
    const value = decoded.kind === 'value' ? decoded.value : undefined
    if (record.topic === this.#topics.resources) {
      if (value === undefined) this.#resources.delete(key)
      else {
        const object = storedObjectOf(value)
        if (object === undefined) {
          this.#onUnreadable(record, 'the value holds no object')
          return
        }
        this.#resources.set(key, { bucket: record.partition, offset: record.offset, object })
      }
      for (const listener of this.#listeners) listener(key)
    } else if (record.topic === this.#topics.placements) {
      if (value === undefined) this.#placements.delete(key)
      else this.#placements.set(key, value as PlacementsRecord)
    } else if (record.topic === this.#topics.status) {
      if (value === undefined) this.#status.delete(key)
      else this.#status.set(key, (value as { status: unknown }).status)
    } else if (record.topic === this.#topics.controllers) {
      if (value === undefined) this.#controllers.delete(key)
      else this.#controllers.set(key, value as ControllerRecord)
    }
  }

  /** Calls `listener` with the key of every resource created, changed or deleted from now on. */
  onResource(listener: (key: string) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  get(key: string): StoredEntry | undefined {
    const slot = this.#resources.get(key)
    return slot && this.#entry(key, slot)
  }

  list(predicate: (key: string) => boolean = () => true): StoredEntry[] {
    const out: StoredEntry[] = []
    for (const [key, slot] of this.#resources) if (predicate(key)) out.push(this.#entry(key, slot))
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  }

  /** Replicas of the current generation (older announcements are from replicas that left or died). */
  controllers(): ControllerRecord[] {
    const all = [...this.#controllers.values()]
    const newest = Math.max(-1, ...all.map(c => c.generation))
    return all.filter(c => c.generation === newest).sort((a, b) => (a.replicaId < b.replicaId ? -1 : 1))
  }

  /** The replica that most recently claimed a bucket, by group generation. */
  claimOf(bucket: number): ControllerRecord | undefined {
    let best: ControllerRecord | undefined
    for (const c of this.#controllers.values()) {
      if (c.buckets.includes(bucket) && (best === undefined || c.generation > best.generation)) best = c
    }
    return best
  }

  #entry(key: string, slot: ResourceSlot): StoredEntry {
    return {
      key,
      bucket: slot.bucket,
      resourceVersion: slot.offset.toString(),
      object: { ...slot.object, metadata: { ...slot.object.metadata, resourceVersion: slot.offset.toString() } },
      status: this.#status.get(key),
      ...(this.#placements.has(key) ? { scheduling: this.#placements.get(key)! } : {})
    }
  }
}
