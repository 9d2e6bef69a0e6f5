import { ErrorCodes, ShoalError, invalid } from '../errors/index.ts'
import type { FieldError } from '../errors/index.ts'
import { DEFAULT_DRAIN_MS, DEFAULT_MAX_IN_FLIGHT } from './defaults.ts'
import { OffsetCommitter } from './offset-committer.ts'
import { SourceMember } from './source-member.ts'
import type { MemberCloseOptions } from './source-member.ts'
import type { GroupMemberStatus } from './member-status.ts'
import type { Batching, Deliver, ConsumerSpec, SourceObserver } from './types.ts'
import { memberInstanceId } from './static-members.ts'
import type { FetchLimits, KafkaClientSecurity } from '../kafka/index.ts'
import type { Log } from '../log/index.ts'

export interface SourceRunnerOptions {
  readonly brokers: readonly string[]
  /** SASL/TLS to the source's brokers (its resolved `spec.net`); absent: PLAINTEXT. */
  readonly security?: KafkaClientSecurity
  readonly source: ConsumerSpec
  /** Group members to run now (0 is allowed: the source is placed but idle). */
  readonly vreplicas: number
  /** This dispatcher's stable id; with the vreplica's index it makes the static member ids. */
  readonly dispatcherId: string
  readonly deliver: Deliver
  /** Set: records are delivered in batches (see Batching); absent: one at a time through `deliver`. */
  readonly batching?: Batching
  readonly log?: Log
  /** What one fetch may return; default FETCH_MAX_BYTES and FETCH_PARTITION_MAX_BYTES. */
  readonly fetchLimits?: FetchLimits
  readonly observer?: SourceObserver
}

export interface SourceRunnerCloseOptions {
  /** How long in-flight deliveries may take to finish before they are aborted (default DEFAULT_DRAIN_MS). */
  readonly drainMs?: number
  /**
   * Whether the members leave the group (default false). Without LeaveGroup the static members keep their
   * partitions for the group session timeout, so a dispatcher that restarts takes them back without a
   * rebalance; a source removed from this dispatcher for good should leave, so its partitions move at once.
   */
  readonly leaveGroup?: boolean
  /**
   * With `leaveGroup` false: the members below this index close without leaving (a runner started again in
   * their place takes their partitions back at once), the others leave — a restart with fewer vreplicas hands
   * the partitions of the members that will not come back over at once, not after the session timeout.
   */
  readonly rejoining?: number
}

/** A runner as `status()` shows it. */
export interface SourceRunnerStatus {
  readonly source: string
  readonly groupId: string
  readonly vreplicas: number
  readonly members: readonly GroupMemberStatus[]
}

/**
 * Runs one KafkaSource's vreplicas on this dispatcher: vreplica `i` is the consumer-group member with the
 * static id `<dispatcherId>-<i>`. Changing the count starts or stops the highest-numbered members only; the
 * others keep running (the group rebalances cooperatively, so they lose no partition that does not move).
 */
export class SourceRunner {
  readonly #options: SourceRunnerOptions
  readonly #maxInFlight: number
  readonly #log: Log
  readonly #committer: OffsetCommitter
  readonly #members: SourceMember[] = []
  /** Members stopping (scaled down, or the runner closing) and not yet closed: a fence cuts their drain too. */
  readonly #stopping = new Set<SourceMember>()
  #fenced = false
  #vreplicas = 0
  #ops: Promise<void> = Promise.resolve()
  #closed = false

  constructor(options: SourceRunnerOptions) {
    checkOptions(options)
    this.#options = options
    this.#maxInFlight = options.source.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT
    this.#log = options.log ?? (() => undefined)
    this.#committer = new OffsetCommitter(this.#clientId('committer'), options.security)
    this.setVReplicas(options.vreplicas).catch(error =>
      this.#log('error', 'starting vreplicas failed', { source: options.source.key, error })
    )
  }

  /** The vreplica count last asked for. */
  get vreplicas(): number {
    return this.#vreplicas
  }

  /**
   * Starts members up to `n` or stops those above it (each stopped one drains, commits and leaves the group).
   * Resolves once stopped members are gone; started ones join in the background. Calls apply in order.
   */
  setVReplicas(n: number): Promise<void> {
    if (!Number.isInteger(n) || n < 0) {
      return Promise.reject(invalid('vreplicas', [{ path: 'vreplicas', message: 'must be a non-negative integer' }]))
    }
    if (this.#closed) return Promise.reject(new ShoalError(ErrorCodes.INTERNAL, 'the source runner is closed'))
    this.#vreplicas = n
    const op = this.#ops.then(() => this.#scaleTo(n))
    this.#ops = op.catch(() => undefined)
    return op
  }

  /** Drains, commits and closes every member, then the runner; calling it again returns the same promise. */
  close(options: SourceRunnerCloseOptions = {}): Promise<void> {
    if (this.#closed) return this.#ops
    this.#closed = true
    const drainMs = options.drainMs ?? DEFAULT_DRAIN_MS
    const leaveGroup = options.leaveGroup ?? false
    const rejoining = options.rejoining ?? Number.POSITIVE_INFINITY
    this.#ops = this.#ops.then(async () => {
      await Promise.all(
        this.#members.splice(0).map((m, i) => this.#stop(m, { drainMs, leaveGroup: leaveGroup || i >= rejoining }))
      )
      await this.#committer.close().catch(() => undefined)
    })
    return this.#ops
  }

  /**
   * Its dispatcher fenced itself: every member — those running, and those already stopping with a longer drain —
   * stops now without leaving the group, and cuts what it has on the wire within `drainMs`; no member starts after.
   * Done at once, not behind the runner's queued operations. The runner is then spent: close it, and start another.
   */
  fence(drainMs: number): void {
    this.#fenced = true
    for (const member of [...this.#members, ...this.#stopping]) {
      member.close({ drainMs, leaveGroup: false }).catch(() => undefined)
    }
  }

  /** Whether `fence` was called. */
  get fenced(): boolean {
    return this.#fenced
  }

  status(): SourceRunnerStatus {
    return {
      source: this.#options.source.key,
      groupId: this.#options.source.groupId,
      vreplicas: this.#vreplicas,
      members: this.#members.map(m => m.status())
    }
  }

  async #scaleTo(n: number): Promise<void> {
    if (this.#closed || this.#fenced) return
    while (this.#members.length < n) {
      const index = this.#members.length
      const member = new SourceMember({
        brokers: this.#options.brokers,
        ...(this.#options.security === undefined ? {} : { security: this.#options.security }),
        clientId: this.#clientId(String(index)),
        source: this.#options.source,
        maxInFlight: this.#maxInFlight,
        groupInstanceId: memberInstanceId(this.#options.dispatcherId, index),
        deliver: this.#options.deliver,
        ...(this.#options.batching === undefined ? {} : { batching: this.#options.batching }),
        committer: this.#committer,
        log: this.#log,
        ...(this.#options.fetchLimits === undefined ? {} : { fetchLimits: this.#options.fetchLimits }),
        ...(this.#options.observer === undefined ? {} : { observer: this.#options.observer }),
        watchPartitions: index === 0
      })
      this.#members.push(member)
      member.start()
    }
    if (this.#members.length > n) {
      const leaving = this.#members.splice(n)
      this.#log('info', 'stopping vreplicas', {
        source: this.#options.source.key,
        members: leaving.map(m => m.groupInstanceId)
      })
      await Promise.all(leaving.map(m => this.#stop(m, { drainMs: DEFAULT_DRAIN_MS, leaveGroup: true })))
    }
  }

  /** Closes a member taken out of `#members`, where a fence still finds it until it is closed. */
  async #stop(member: SourceMember, options: MemberCloseOptions): Promise<void> {
    this.#stopping.add(member)
    try {
      await member.close(options)
    } finally {
      this.#stopping.delete(member)
    }
  }

  #clientId(role: string): string {
    const key = this.#options.source.key.replace(/[^A-Za-z0-9._-]+/g, '.')
    return `shoal-${this.#options.dispatcherId}-${key}-${role}`
  }
}

function checkOptions(options: SourceRunnerOptions): void {
  const fields: FieldError[] = []
  const { source } = options
  if (options.brokers.length === 0) fields.push({ path: 'brokers', message: 'must name at least one broker' })
  if (!/^\S+$/.test(options.dispatcherId)) fields.push({ path: 'dispatcherId', message: 'must be a non-empty word' })
  if (!Number.isInteger(options.vreplicas) || options.vreplicas < 0) {
    fields.push({ path: 'vreplicas', message: 'must be a non-negative integer' })
  }
  if (!/^\S+$/.test(source.groupId)) fields.push({ path: 'source.groupId', message: 'must be a non-empty word' })
  if (source.topics.length === 0) fields.push({ path: 'source.topics', message: 'must name at least one topic' })
  if (source.maxInFlight !== undefined && (!Number.isInteger(source.maxInFlight) || source.maxInFlight < 1)) {
    fields.push({ path: 'source.maxInFlight', message: 'must be a positive integer' })
  }
  const limits = options.batching?.limits
  if (limits !== undefined) {
    if (!Number.isSafeInteger(limits.maxEvents) || limits.maxEvents < 1) {
      fields.push({ path: 'batching.limits.maxEvents', message: 'must be a positive integer' })
    }
    if (!(limits.maxBytes >= 1)) fields.push({ path: 'batching.limits.maxBytes', message: 'must be at least 1' })
    if (!(limits.maxWaitMs >= 0)) fields.push({ path: 'batching.limits.maxWaitMs', message: 'must not be negative' })
  }
  if (fields.length > 0) throw invalid('source runner options', fields)
}
