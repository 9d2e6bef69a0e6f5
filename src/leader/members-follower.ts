import { EventEmitter } from 'node:events'
import { LogTailer } from '../kafka/index.ts'
import type { KafkaConnection, LogRecord } from '../kafka/index.ts'
import { memberUpdateOf, storeNames } from '../store/index.ts'
import { DEFAULT_LIVENESS_TIMEOUT_MS, MembersView } from '../dispatcher/index.ts'
import type { MemberStatus } from '../dispatcher/index.ts'
import type { Log } from '../log/index.ts'

export interface MembersFollowerOptions {
  readonly connection: KafkaConnection
  readonly prefix?: string
  readonly livenessTimeoutMs?: number
  /** How often liveness is judged again when no record arrives (default a tenth of the timeout, at most 1 s). */
  readonly checkIntervalMs?: number
  readonly log?: Log
}

/**
 * Follows `<prefix>.members` for a controller: every heartbeat into a MembersView, and `change` whenever
 * the set of live dispatchers (or the zone, node or capacity of one) changes — on a record, or on a timer
 * when a dispatcher falls silent. The topics must exist (the controller's store creates them).
 */
export class MembersFollower extends EventEmitter<{ change: [readonly MemberStatus[]] }> {
  readonly view: MembersView
  readonly #tailer: LogTailer
  readonly #topic: string
  readonly #checkIntervalMs: number
  readonly #log: Log
  #timer: NodeJS.Timeout | undefined
  #signature = ''
  #checkQueued = false

  constructor(options: MembersFollowerOptions) {
    super()
    const livenessTimeoutMs = options.livenessTimeoutMs ?? DEFAULT_LIVENESS_TIMEOUT_MS
    this.view = new MembersView({ livenessTimeoutMs })
    this.#topic = storeNames(options.prefix).membersTopic
    this.#checkIntervalMs = options.checkIntervalMs ?? Math.min(1_000, Math.round(livenessTimeoutMs / 10))
    this.#log = options.log ?? (() => undefined)
    this.#tailer = new LogTailer({
      connection: { ...options.connection, clientId: `${options.connection.clientId}-members` },
      topics: [this.#topic],
      onRecord: record => this.#onRecord(record),
      onError: error => this.#log('warn', 'reading the members topic failed; retrying', { error: String(error) })
    })
  }

  /** Starts reading; resolves once the topic is read to its end. */
  async start(): Promise<void> {
    await this.#tailer.start()
    await this.#tailer.barrier([{ topic: this.#topic }])
    this.#timer = setInterval(() => this.#check(), this.#checkIntervalMs)
    this.#check()
  }

  /** Dispatchers nobody may consider dead yet, by ordinal. */
  liveDispatchers(): MemberStatus[] {
    return this.view.liveDispatchers()
  }

  highestIncarnation(id: string): number | undefined {
    return this.view.highestIncarnation(id)
  }

  /** Every dispatcher that has not left, dead or alive, by ordinal. */
  members(): MemberStatus[] {
    return this.view.members()
  }

  /** Resolves once every heartbeat appended before this call has been applied. */
  async barrier(): Promise<void> {
    await this.#tailer.barrier([{ topic: this.#topic }])
  }

  async close(): Promise<void> {
    clearInterval(this.#timer)
    this.#timer = undefined
    await this.#tailer.close()
  }

  #onRecord(record: LogRecord): void {
    const read = memberUpdateOf(record)
    if (read.kind === 'skip') return
    if (read.kind === 'unreadable') {
      this.#log('warn', 'skipping an unreadable heartbeat', {
        id: read.id,
        offset: String(record.offset),
        reason: read.reason
      })
      return
    }
    const id = read.update.id
    const result = this.view.apply(read.update)
    if (result.kind === 'invalid') {
      this.#log('warn', 'skipping an invalid heartbeat', { id, offset: String(record.offset), reason: result.reason })
    }
    if (result.kind === 'changed' && !this.#checkQueued) {
      // Once per fetch, not per record.
      this.#checkQueued = true
      queueMicrotask(() => {
        this.#checkQueued = false
        this.#check()
      })
    }
  }

  #check(): void {
    const live = this.view.liveDispatchers()
    const signature = JSON.stringify(live.map(m => [m.id, m.incarnation, m.zone, m.node, m.capacity]))
    if (signature === this.#signature) return
    this.#signature = signature
    this.emit('change', live)
  }
}
