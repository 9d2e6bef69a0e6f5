import { LogTailer } from '../kafka/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import { decodeValue } from '../store/index.ts'
import type { DeliveryErrorRecord, StoreNames } from '../store/index.ts'

/** Every replica's copy of `<prefix>.delivery-errors`: the last delivery error of each source, for its status. */
export class DeliveryErrors {
  readonly #errors = new Map<string, DeliveryErrorRecord>()
  readonly #tailer: LogTailer

  constructor(connection: KafkaConnection, names: StoreNames, log: (message: string, error: unknown) => void) {
    this.#tailer = new LogTailer({
      connection: { ...connection, clientId: `${connection.clientId}-delivery-errors` },
      topics: [names.deliveryErrorsTopic],
      onRecord: record => {
        const key = record.key?.toString('utf8')
        if (key === undefined) return
        const decoded = decodeValue(record.value, record.headers)
        if (decoded.kind === 'tombstone') this.#errors.delete(key)
        else if (decoded.kind === 'value' && isErrorRecord(decoded.value)) this.#errors.set(key, decoded.value)
      },
      onError: error => log('reading the delivery errors failed; retrying', error)
    })
  }

  start(): Promise<void> {
    return this.#tailer.start()
  }

  close(): Promise<void> {
    return this.#tailer.close()
  }

  lastOf(source: string): DeliveryErrorRecord | undefined {
    return this.#errors.get(source)
  }
}

function isErrorRecord(value: unknown): value is DeliveryErrorRecord {
  const v = value as Partial<DeliveryErrorRecord> | null
  return typeof v?.message === 'string' && typeof v.time === 'string' && typeof v.dispatcher === 'string'
}
