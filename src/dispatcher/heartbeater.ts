import { EventEmitter } from 'node:events'
import { performance } from 'node:perf_hooks'
import { KafkaProducer } from '../kafka/index.ts'
import type { KafkaConnection } from '../kafka/index.ts'
import { encodeValue, schemaHeaders } from '../store/index.ts'
import type { MemberRecord } from '../store/index.ts'
import { INCARNATION_HEADER } from '../store/index.ts'

export interface HeartbeaterOptions {
  readonly connection: KafkaConnection
  readonly topic: string
  readonly id: string
  readonly intervalMs: number
  /** How long one heartbeat waits for its acknowledgement, and a connection for the broker (default: the interval). */
  readonly deadlineMs?: number
  /** No heartbeat sent within this long acknowledged → `stale`. */
  readonly fenceAfterMs: number
  /** The heartbeat to send, built when it is sent. */
  readonly record: () => MemberRecord
  readonly clock?: () => number
}

/**
 * Every in-sync replica: a heartbeat counts once it is committed, which is when the controllers can read it
 * (they read up to the high watermark). A leader's own acknowledgement (acks=1) is not enough: a leader cut off
 * from the other brokers and from the KRaft quorum, no longer the leader for anyone else, went on
 * acknowledging the heartbeats of the dispatchers cut off with it (test/lab/zone-cut.lab.ts), and they never
 * fenced while the controllers declared them dead and gave their work to others.
 */
const ALL_IN_SYNC = -1

/**
 * Each heartbeat goes out on this many connections at once, and counts when one of them is acknowledged. On a lossy
 * link one TCP connection stalls for seconds at a time (each lost segment doubles the retransmission timeout: at
 * 30 % loss each way, 6 s in about 3 % of round trips), past the fence time and even the liveness timeout: the lab's
 * 30 % lossy link fenced and declared dead dispatchers that were never cut off. Stalls of two connections are
 * independent; both stalling that long is about a thousand times rarer. A duplicate heartbeat is harmless: the
 * members topic is compacted by dispatcher id, and the controllers take the newest.
 */
const LANES = 2

/**
 * Sends a dispatcher's heartbeats to `<prefix>.members` and says when they stop getting through. Committed
 * (acks=all), one attempt each, a deadline of its own (`deadlineMs`): a lost heartbeat is harmless (the next one
 * follows), a stalled one is not — it would hide that the dispatcher is cut off. Staleness is measured
 * from the *sending* of the newest acknowledged heartbeat, which is no later than its append time, the time
 * controllers count the liveness timeout from.
 */
export class Heartbeater extends EventEmitter<{ stale: []; fresh: []; missed: [unknown] }> {
  readonly #options: HeartbeaterOptions
  readonly #clock: () => number
  /** Each lane a producer of its own, so a connection of its own; a heartbeat goes out on every lane. */
  readonly #lanes: Array<{ producer: KafkaProducer }>
  /** Producers made so far: each new one starts its bootstrap list one broker further on. */
  #renewals = 0
  #inFlight: Promise<boolean> | undefined
  #lastAckedSentAt: number | undefined
  #stale = false
  #timer: NodeJS.Timeout | undefined
  #watchdog: NodeJS.Timeout | undefined

  constructor(options: HeartbeaterOptions) {
    super()
    this.#options = options
    this.#clock = options.clock ?? (() => performance.now())
    this.#lanes = Array.from({ length: LANES }, () => ({ producer: this.#newProducer() }))
  }

  get #deadlineMs(): number {
    return this.#options.deadlineMs ?? this.#options.intervalMs
  }

  /** True once no heartbeat sent within the fence time has been acknowledged. */
  get stale(): boolean {
    return this.#stale
  }

  /** Local monotonic time at which the newest acknowledged heartbeat was sent. */
  get lastAckedSentAt(): number | undefined {
    return this.#lastAckedSentAt
  }

  /** Heartbeats every interval from now on, and watches for them to stop getting through. */
  start(): void {
    if (this.#timer !== undefined) return
    this.#timer = setInterval(() => void this.beat(), this.#options.intervalMs)
    const watchEvery = Math.max(20, Math.min(250, Math.round(this.#options.fenceAfterMs / 10)))
    this.#watchdog = setInterval(() => this.#check(), watchEvery)
  }

  /** Sends one heartbeat now (or joins the one in flight); true if the leader acknowledged it. */
  beat(): Promise<boolean> {
    this.#inFlight ??= this.#send().finally(() => (this.#inFlight = undefined))
    return this.#inFlight
  }

  /** Sends a heartbeat built from now on: after the one in flight, if any (that one was built before). */
  async beatFresh(): Promise<boolean> {
    if (this.#inFlight !== undefined) await this.#inFlight
    return this.beat()
  }

  /** Stops sending and waits for the heartbeat in flight. */
  async stop(): Promise<void> {
    clearInterval(this.#timer)
    clearInterval(this.#watchdog)
    this.#timer = undefined
    this.#watchdog = undefined
    await this.#inFlight
  }

  /**
   * The leaving record: a tombstone, so controllers drop the dispatcher at once rather than after the liveness
   * timeout. Its header names the incarnation, so it cannot remove a newer process with the same id.
   */
  async leave(incarnation: number): Promise<boolean> {
    const headers = schemaHeaders()
    headers.set(Buffer.from(INCARNATION_HEADER), Buffer.from(String(incarnation)))
    return this.#produce(null, headers)
  }

  async close(): Promise<void> {
    await this.stop()
    await Promise.all(this.#lanes.map(lane => lane.producer.close(true).catch(() => undefined)))
  }

  async #send(): Promise<boolean> {
    const sentAt = this.#clock()
    const acked = await this.#produce(encodeValue(this.#options.record()), schemaHeaders())
    if (acked && (this.#lastAckedSentAt === undefined || sentAt > this.#lastAckedSentAt)) {
      this.#lastAckedSentAt = sentAt
      this.#check()
    }
    return acked
  }

  /** Sends on every lane; true once one of them is acknowledged within the deadline. */
  async #produce(value: Buffer | null, headers: Map<Buffer, Buffer>): Promise<boolean> {
    const sends = this.#lanes.map(lane => this.#produceOn(lane, value, headers))
    return Promise.any(sends.map(send => send.then(acked => acked || Promise.reject(new Error('missed'))))).catch(
      () => false
    )
  }

  async #produceOn(
    lane: { producer: KafkaProducer },
    value: Buffer | null,
    headers: Map<Buffer, Buffer>
  ): Promise<boolean> {
    const producer = lane.producer
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no acknowledgement within ${this.#deadlineMs} ms`)), this.#deadlineMs)
    })
    try {
      await Promise.race([
        producer.send({
          // A null value is a tombstone; the client types every value as a Buffer but writes null as such.
          messages: [
            {
              topic: this.#options.topic,
              partition: 0,
              key: Buffer.from(this.#options.id),
              value: value as Buffer,
              headers
            }
          ],
          // The client ignores the constructor's acks unless idempotent: give it on every send.
          acks: ALL_IN_SYNC
        }),
        deadline
      ])
      return true
    } catch (error) {
      this.emit('missed', error)
      // A connection can be left half-open by a network cut, and the client goes on sending to a leader that was cut
      // off with its zone until it asks for metadata again: after a miss, start over with a fresh client, which asks
      // where the leader is now. After two misses, the zone cuts that took the heartbeats' leader had the healthy
      // dispatchers find the new leader only 1.2–3.2 s after Kafka had moved it, and fence meanwhile.
      if (producer === lane.producer) {
        lane.producer = this.#newProducer()
        void producer.close(true).catch(() => undefined)
      }
      return false
    } finally {
      clearTimeout(timer)
    }
  }

  #check(): void {
    const last = this.#lastAckedSentAt
    const stale = last === undefined || this.#clock() - last > this.#options.fenceAfterMs
    if (stale === this.#stale) return
    this.#stale = stale
    this.emit(stale ? 'stale' : 'fresh')
  }

  #newProducer(): KafkaProducer {
    const timeout = this.#deadlineMs
    // The client asks its first bootstrap broker for metadata first, and with retries 0 never another: a broker
    // that black-holes (a zone cut off, not refusing) would make every renewed producer miss every heartbeat.
    // Each renewal starts one broker further on, so the next producer asks a broker that may answer.
    const brokers = this.#options.connection.brokers
    const start = this.#renewals++ % brokers.length
    return new KafkaProducer({
      clientId: `${this.#options.connection.clientId}-heartbeat`,
      bootstrapBrokers: [...brokers.slice(start), ...brokers.slice(0, start)],
      acks: ALL_IN_SYNC,
      retries: 0,
      timeout,
      requestTimeout: timeout,
      connectTimeout: timeout
    })
  }
}
