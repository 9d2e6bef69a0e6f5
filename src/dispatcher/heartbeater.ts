import { EventEmitter } from 'node:events'
import { performance } from 'node:perf_hooks'
import { Producer } from '@platformatic/kafka'
import type { ProducerOptions } from '@platformatic/kafka'
import type { KafkaConnection } from '../kafka/index.ts'
import { encodeValue, schemaHeaders } from '../store/index.ts'
import type { MemberRecord } from '../store/index.ts'
import { INCARNATION_HEADER } from '../store/index.ts'

export interface HeartbeaterOptions {
  readonly connection: KafkaConnection
  readonly topic: string
  readonly id: string
  readonly intervalMs: number
  /** No heartbeat sent within this long acknowledged → `stale`. */
  readonly fenceAfterMs: number
  /** The heartbeat to send, built when it is sent. */
  readonly record: () => MemberRecord
  readonly clock?: () => number
  /** Makes a Kafka client for heartbeats from its options (tests give a stand-in; by default a Producer). */
  readonly client?: (options: ProducerOptions<Buffer, Buffer, Buffer, Buffer>) => HeartbeatClient
}

/** What the heartbeater needs of a Kafka producer. */
export type HeartbeatClient = Pick<Producer, 'send' | 'close'>

/**
 * Every in-sync replica: a heartbeat counts once it is committed, which is when the controllers can read it
 * (they read up to the high watermark). A leader's own acknowledgement (acks=1) is not enough: a leader cut off
 * from the other brokers and from the KRaft quorum, no longer the leader for anyone else, went on
 * acknowledging the heartbeats of the dispatchers cut off with it (test/lab/zone-cut.lab.ts), and they never
 * fenced while the controllers declared them dead and gave their work to others.
 */
const ALL_IN_SYNC = -1

/**
 * Sends a dispatcher's heartbeats to `<prefix>.members` and says when they stop getting through. Committed
 * (acks=all), one attempt each, a deadline of one interval: a lost heartbeat is harmless (the next one
 * follows), a stalled one is not — it would hide that the dispatcher is cut off. Staleness is measured
 * from the *sending* of the newest acknowledged heartbeat, which is no later than its append time, the time
 * controllers count the liveness timeout from.
 */
export class Heartbeater extends EventEmitter<{ stale: []; fresh: []; missed: [unknown] }> {
  readonly #options: HeartbeaterOptions
  readonly #clock: () => number
  /** The clients heartbeats go through: one, or two while a renewed one has not been acknowledged yet. */
  #producers: HeartbeatClient[]
  /** Producers made so far: each new one starts its bootstrap list one broker further on. */
  #renewals = 0
  #failures = 0
  #inFlight: Promise<boolean> | undefined
  #lastAckedSentAt: number | undefined
  #stale = false
  #timer: NodeJS.Timeout | undefined
  #watchdog: NodeJS.Timeout | undefined

  constructor(options: HeartbeaterOptions) {
    super()
    this.#options = options
    this.#clock = options.clock ?? (() => performance.now())
    this.#producers = [this.#newProducer()]
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
    // Every interval a heartbeat of its own: one whose answer is late (it counts when it comes) must not make
    // the next one wait — on a slow link that halved the heartbeats.
    this.#timer = setInterval(() => void this.#beatNow(), this.#options.intervalMs)
    const watchEvery = Math.max(20, Math.min(250, Math.round(this.#options.fenceAfterMs / 10)))
    this.#watchdog = setInterval(() => this.#check(), watchEvery)
  }

  /** Sends one heartbeat now (or joins the one in flight); true if the leader acknowledged it. */
  beat(): Promise<boolean> {
    return this.#inFlight ?? this.#beatNow()
  }

  #beatNow(): Promise<boolean> {
    const sending: Promise<boolean> = this.#send().finally(() => {
      if (this.#inFlight === sending) this.#inFlight = undefined
    })
    this.#inFlight = sending
    return sending
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
    await Promise.all(this.#producers.map(producer => producer.close(true).catch(() => undefined)))
  }

  async #send(): Promise<boolean> {
    const sentAt = this.#clock()
    return this.#produce(encodeValue(this.#options.record()), schemaHeaders(), sentAt)
  }

  /**
   * Sends one record through every live client (two while a renewed one has not been acknowledged yet) and
   * resolves to whether one acknowledged it within the deadline of one interval. An acknowledgement that comes
   * later still counts for staleness (below), and each acknowledgement settles on the client that gave it.
   */
  async #produce(value: Buffer | null, headers: Map<Buffer, Buffer>, sentAt?: number): Promise<boolean> {
    const producers = [...this.#producers]
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<false>(resolve => {
      timer = setTimeout(() => resolve(false), this.#options.intervalMs)
    })
    const errors: unknown[] = []
    const sends = producers.map(producer =>
      this.#sendOn(producer, value, headers).then(
        () => {
          this.#acknowledged(producer, sentAt)
          return true as const
        },
        (error: unknown) => {
          errors.push(error)
          return false as const
        }
      )
    )
    const anyAcked = new Promise<boolean>(resolve => {
      let left = sends.length
      for (const send of sends) void send.then(acked => (acked ? resolve(true) : --left === 0 && resolve(false)))
    })
    try {
      const acked = await Promise.race([anyAcked, deadline])
      if (!acked) this.#missed(errors[0] ?? new Error(`no acknowledgement within ${this.#options.intervalMs} ms`))
      return acked
    } finally {
      clearTimeout(timer)
    }
  }

  #sendOn(producer: HeartbeatClient, value: Buffer | null, headers: Map<Buffer, Buffer>): Promise<unknown> {
    return producer.send({
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
    })
  }

  /**
   * A record sent at `sentAt` was committed through `producer`, maybe after its beat's deadline: a late
   * acknowledgement is as good as a timely one for staleness, which is measured from the sending. The client
   * that answered is kept, the others closed.
   */
  #acknowledged(producer: HeartbeatClient, sentAt: number | undefined): void {
    if (this.#producers.includes(producer)) {
      this.#failures = 0
      for (const other of this.#producers) if (other !== producer) void other.close(true).catch(() => undefined)
      this.#producers = [producer]
    }
    if (sentAt !== undefined && (this.#lastAckedSentAt === undefined || sentAt > this.#lastAckedSentAt)) {
      this.#lastAckedSentAt = sentAt
      this.#check()
    }
  }

  /**
   * A beat missed its deadline. After two in a row a fresh client starts beside the newest one (a connection can
   * be left half-open by a network cut, or its first bootstrap broker black-holes); the older client is not
   * closed until one of them is acknowledged — on a lossy link a fresh client has to connect through the loss
   * too, and closing the old one would throw away the acknowledgements on their way through its connection.
   */
  #missed(error: unknown): void {
    this.emit('missed', error)
    if (++this.#failures < 2) return
    this.#failures = 0
    const oldest = this.#producers.length >= 2 ? this.#producers.shift() : undefined
    if (oldest !== undefined) void oldest.close(true).catch(() => undefined)
    this.#producers.push(this.#newProducer())
  }

  #check(): void {
    const last = this.#lastAckedSentAt
    const stale = last === undefined || this.#clock() - last > this.#options.fenceAfterMs
    if (stale === this.#stale) return
    this.#stale = stale
    this.emit(stale ? 'stale' : 'fresh')
  }

  #newProducer(): HeartbeatClient {
    const timeout = this.#options.intervalMs
    // The client waits for an answer (and a connection) up to the fence time, not one interval: on a lossy link
    // TCP retransmits, and a heartbeat answered late still keeps the dispatcher fresh. The broker's own wait for
    // the in-sync replicas stays one interval.
    const patience = Math.max(timeout, this.#options.fenceAfterMs)
    // The client asks its first bootstrap broker for metadata first, and with retries 0 never another: a broker
    // that black-holes (a zone cut off, not refusing) would make every renewed producer miss every heartbeat.
    // Each renewal starts one broker further on, so the next producer asks a broker that may answer.
    const brokers = this.#options.connection.brokers
    const start = this.#renewals++ % brokers.length
    const make = this.#options.client ?? (options => new Producer(options))
    return make({
      clientId: `${this.#options.connection.clientId}-heartbeat`,
      bootstrapBrokers: [...brokers.slice(start), ...brokers.slice(0, start)],
      acks: ALL_IN_SYNC,
      retries: 0,
      timeout,
      requestTimeout: patience,
      connectTimeout: patience
    })
  }
}
