import { KafkaProducer, ensureTopics, kafkaClientOptions } from '../kafka/index.ts'
import type { AttemptInfo, DeliveryObserver, OutcomeInfo, RetryInfo } from '../delivery/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import { encodeValue, schemaHeaders, storeNames } from '../store/index.ts'
import type { DeliveryErrorRecord } from '../store/index.ts'

/** A source's error is written again, if it repeats unchanged, at most this often. */
const REPEAT_MS = 30_000
const FLUSH_MS = 2_000

/**
 * Reports each source's last delivery error to `<prefix>.delivery-errors` (one compacted record per source), where
 * every controller reads it into the source's status. A delivery observer: it sees every failed attempt (an error
 * status or no answer) and every record dead-lettered or dropped, keeps the last per source, and writes the changed
 * ones every two seconds — never a record per failure, so a failing sink cannot flood the topic.
 */
export class DeliveryErrorReporter implements DeliveryObserver {
  readonly #connection: KafkaConnection
  readonly #dispatcher: string
  readonly #topic: string
  readonly #next: DeliveryObserver | undefined
  readonly #pending = new Map<string, DeliveryErrorRecord>()
  readonly #written = new Map<string, { message: string; at: number }>()
  #producer: KafkaProducer | undefined
  #timer: NodeJS.Timeout | undefined
  #flushing: Promise<void> = Promise.resolve()

  constructor(options: {
    connection: KafkaConnection
    prefix?: string
    dispatcher: string
    /** Another observer (metrics) that sees every call too. */
    next?: DeliveryObserver
  }) {
    this.#connection = options.connection
    this.#dispatcher = options.dispatcher
    this.#topic = storeNames(options.prefix).deliveryErrorsTopic
    this.#next = options.next
  }

  async start(): Promise<void> {
    await ensureTopics(this.#connection, [
      { name: this.#topic, partitions: 1, configs: { 'cleanup.policy': 'compact' } }
    ])
    this.#producer = new KafkaProducer({
      ...kafkaClientOptions(`${this.#connection.clientId}-delivery-errors`, this.#connection.brokers, 'request'),
      retries: 1
    })
    this.#timer = setInterval(() => {
      this.#flushing = this.#flushing.then(() => this.#flush())
    }, FLUSH_MS)
    this.#timer.unref()
  }

  async close(): Promise<void> {
    clearInterval(this.#timer)
    await this.#flushing
    await this.#flush()
    await this.#producer?.close().catch(() => undefined)
  }

  onAttempt(info: AttemptInfo): void {
    this.#next?.onAttempt?.(info)
    if (info.status !== undefined && info.status < 300) return
    const to = info.endpoint === 'sink' ? 'the sink' : 'the dead letter sink'
    this.#note(
      info.sourceKey,
      info.notSent
        ? `nothing sent to ${to} (attempt ${info.attempt}): ${info.error ?? ''}`
        : info.status === undefined
          ? `${to} did not answer (attempt ${info.attempt}): ${info.error ?? 'no response'}`
          : `${to} answered ${info.status} (attempt ${info.attempt})`
    )
  }

  onRetry(info: RetryInfo): void {
    this.#next?.onRetry?.(info)
  }

  onOutcome(info: OutcomeInfo): void {
    this.#next?.onOutcome?.(info)
    const outcome = info.outcome
    if (outcome.kind === 'dead-lettered') this.#note(info.sourceKey, `dead-lettered: ${outcome.reason}`)
    else if (outcome.kind === 'dropped') this.#note(info.sourceKey, `dropped: ${outcome.reason}`)
  }

  /** An error seen outside the deliverer (a sink that cannot be resolved). */
  note(source: string, message: string): void {
    this.#note(source, message)
  }

  #note(source: string, message: string): void {
    const written = this.#written.get(source)
    if (written?.message === message && Date.now() - written.at < REPEAT_MS) return
    this.#pending.set(source, {
      source,
      dispatcher: this.#dispatcher,
      time: new Date().toISOString(),
      message: message.slice(0, 500)
    })
  }

  async #flush(): Promise<void> {
    if (!this.#producer || this.#pending.size === 0) return
    const records = [...this.#pending.values()]
    this.#pending.clear()
    try {
      await this.#producer.send({
        acks: 1,
        messages: records.map(r => ({
          topic: this.#topic,
          partition: 0,
          key: Buffer.from(r.source),
          value: encodeValue(r),
          headers: schemaHeaders()
        }))
      })
      for (const r of records) this.#written.set(r.source, { message: r.message, at: Date.now() })
    } catch {
      // Best effort: the next error of the source is reported in its turn.
    }
  }
}
