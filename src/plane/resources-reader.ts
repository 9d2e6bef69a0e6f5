import { LogTailer } from '../kafka/index.ts'
import type { LogRecord } from '../kafka/index.ts'
import { decodeValue, storeNames, storedObjectOf } from '../store/index.ts'
import type { StoredObject } from '../store/index.ts'
import type { Log } from '../log/index.ts'

/** One record of the resources topic as a subscriber sees it: the object, or undefined for its tombstone. */
export interface ResourceUpdate {
  readonly key: string
  readonly offset: bigint
  readonly object: StoredObject | undefined
}

export type ResourceListener = (update: ResourceUpdate) => void

export interface ResourcesReaderOptions {
  readonly brokers: readonly string[]
  readonly prefix?: string
  readonly dispatcherId: string
  readonly log: Log
}

/**
 * The one reader of the store's resources topic on a dispatcher: each plane subscribes to the kind it runs,
 * and Secrets are kept here for every plane that resolves a `spec.net` (docs/secrets.md). Unreadable records
 * are skipped.
 */
export class ResourcesReader {
  readonly #tailer: LogTailer
  readonly #listeners = new Map<string, ResourceListener[]>()
  /** The Secrets (sealed, as stored) that sources' `spec.net` may refer to. */
  readonly #secrets = new Map<string, StoredObject>()
  readonly #log: Log

  constructor(options: ResourcesReaderOptions) {
    this.#log = options.log
    this.#tailer = new LogTailer({
      connection: { brokers: options.brokers, clientId: `shoal-${options.dispatcherId}-resources` },
      topics: [storeNames(options.prefix).resourcesTopic],
      onRecord: record => this.apply(record),
      onError: error => options.log('warn', 'reading the sources failed; retrying', { error: String(error) })
    })
  }

  /** Calls `listener` with every record of `kind` (`KafkaSource`, `PingSource`, `Secret`), in log order. */
  subscribe(kind: string, listener: ResourceListener): void {
    this.#listeners.set(`${kind}/`, [...(this.#listeners.get(`${kind}/`) ?? []), listener])
  }

  /** A Secret as stored, by key (`Secret/namespace/name`). */
  secret(key: string): StoredObject | undefined {
    return this.#secrets.get(key)
  }

  start(): Promise<void> {
    return this.#tailer.start()
  }

  close(): Promise<void> {
    return this.#tailer.close()
  }

  /**
   * Takes one record of the resources topic, as the tailer reads it. Never throws: a record that cannot be read
   * or applied is skipped with a warning, as the tailer would otherwise read its batch again and again, handing
   * every kind's listeners the records before it once more each time.
   */
  apply(record: LogRecord): void {
    const key = record.key?.toString('utf8')
    if (key === undefined) return
    const listeners = this.#listeners.get(key.slice(0, key.indexOf('/') + 1))
    const isSecret = key.startsWith('Secret/')
    if (listeners === undefined && !isSecret) return
    const decoded = decodeValue(record.value, record.headers)
    if (decoded.kind === 'unreadable') return
    let object: StoredObject | undefined
    if (decoded.kind === 'value') {
      object = storedObjectOf(decoded.value)
      if (object === undefined) {
        this.#log('warn', 'a resources record holds no object; skipped', { key, offset: String(record.offset) })
        return
      }
    }
    if (isSecret) {
      if (object === undefined) this.#secrets.delete(key)
      else this.#secrets.set(key, object)
    }
    for (const listener of listeners ?? []) {
      try {
        listener({ key, offset: record.offset, object })
      } catch (error) {
        this.#log('warn', 'a resources record could not be applied; skipped', {
          key,
          offset: String(record.offset),
          error: String(error)
        })
      }
    }
  }
}
