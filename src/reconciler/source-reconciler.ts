import { sourceStatus } from '../api/index.ts'
import type { ConditionObservation, SourceStatus } from '../api/index.ts'
import { kafkaErrorMessage } from '../kafka/index.ts'
import { resolveSourceNet, sourcesReferring, unresolvedMessage } from '../secrets/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import { commitInitialOffsets } from '../kafka-source/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { ResourceStore } from '../store/index.ts'
import type { Log } from '../log/index.ts'

export interface SourceReconcilerOptions {
  readonly store: ResourceStore
  readonly serviceUrlTemplate: string
  readonly log: Log
  /** Longest wait between attempts for a source whose Kafka cannot be reached. */
  readonly maxBackoffMs?: number
  /** Opens the Secrets a source's `spec.net` refers to; absent: such a source reports that it cannot. */
  readonly secretKey?: SecretKey
}

/**
 * Reconciles the KafkaSources of the buckets this replica owns: commits each source's consumer-group offsets
 * at `initialOffset` (Knative's InitialOffsetsCommitted), so a source that starts with no consumer still
 * delivers the record that wakes it, and records the outcome as a condition. Every replica runs one; each acts
 * only on its own buckets, so every source has exactly one reconciler at a time.
 */
export class SourceReconciler {
  readonly #options: SourceReconcilerOptions
  /** The generation each source was last reconciled at; retried sources wait for their timer. */
  readonly #done = new Map<string, number>()
  readonly #inFlight = new Set<string>()
  /** Sources waiting to be retried, and how many attempts failed in a row. */
  readonly #retry = new Map<string, NodeJS.Timeout>()
  readonly #failures = new Map<string, number>()
  #unsubscribe: (() => void) | undefined
  readonly #onAssignment = () => this.#all()
  #stopped = false

  constructor(options: SourceReconcilerOptions) {
    this.#options = options
  }

  start(): void {
    this.#unsubscribe = this.#options.store.onResource(key => this.#consider(key))
    this.#options.store.onAssignment(this.#onAssignment)
    this.#all()
  }

  stop(): void {
    this.#stopped = true
    this.#unsubscribe?.()
    this.#options.store.offAssignment(this.#onAssignment)
    for (const timer of this.#retry.values()) clearTimeout(timer)
  }

  #all(): void {
    for (const entry of this.#options.store.snapshot(k => k.startsWith('KafkaSource/'))) this.#consider(entry.key)
  }

  #consider(key: string): void {
    if (key.startsWith('Secret/')) return this.#secretChanged(key)
    if (this.#stopped || !key.startsWith('KafkaSource/') || this.#inFlight.has(key) || this.#retry.has(key)) return
    const store = this.#options.store
    const entry = store.peek(key)
    if (!entry) {
      this.#done.delete(key)
      return
    }
    if (store.ownerOf(entry.bucket).kind !== 'self') return
    if (this.#done.get(key) === entry.object.metadata.generation) return
    this.#inFlight.add(key)
    void this.#reconcile(key)
      .catch(error => this.#options.log('error', 'reconciling a source failed', { source: key, error: String(error) }))
      .finally(() => this.#inFlight.delete(key))
  }

  /** A Secret changed: its namespace's sources that refer to it reconcile again (new credentials, or now found). */
  #secretChanged(secretKey: string): void {
    for (const key of sourcesReferring(this.#options.store, secretKey)) {
      this.#done.delete(key)
      const timer = this.#retry.get(key)
      if (timer !== undefined) clearTimeout(timer)
      this.#retry.delete(key)
      this.#consider(key)
    }
  }

  async #reconcile(key: string): Promise<void> {
    const store = this.#options.store
    const entry = store.peek(key)
    if (!entry || !isKafkaSource(entry)) return
    const source = entry.object
    const generation = source.metadata.generation
    let observation: ConditionObservation
    const net = resolveSourceNet(source, k => store.peek(k)?.object, this.#options.secretKey)
    if (net.kind === 'unresolved') {
      // A missing Secret or key is the user's to fix: say which field, retry (a new Secret also wakes us).
      observation = {
        type: 'InitialOffsetsCommitted',
        status: 'False',
        reason: 'NetSecretNotResolved',
        message: unresolvedMessage(net)
      }
      this.#scheduleRetry(key)
      return this.#writeCondition(key, observation)
    }
    try {
      const result = await commitInitialOffsets({
        ...(net.security === undefined ? {} : { security: net.security }),
        brokers: source.spec.bootstrapServers,
        groupId: source.spec.consumerGroup,
        topics: source.spec.topics,
        initialOffset: source.spec.initialOffset,
        clientId: 'shoal-controller-initial-offsets'
      })
      observation = { type: 'InitialOffsetsCommitted', status: 'True' }
      this.#done.set(key, generation)
      this.#failures.delete(key)
      if (result.committed.length > 0) {
        this.#options.log('info', 'initial offsets committed', { source: key, partitions: result.committed.length })
      }
    } catch (error) {
      observation = {
        type: 'InitialOffsetsCommitted',
        status: 'False',
        reason: 'OffsetsNotCommitted',
        message: `could not commit the initial offsets of group ${source.spec.consumerGroup}: ${kafkaErrorMessage(error)}`
      }
      this.#scheduleRetry(key)
    }
    await this.#writeCondition(key, observation)
  }

  /** Writes the condition into the source's status, unless it already says the same. */
  async #writeCondition(key: string, observation: ConditionObservation): Promise<void> {
    const store = this.#options.store
    const entry = store.peek(key)
    if (!entry || !isKafkaSource(entry)) return
    const previous = entry.status as SourceStatus | undefined
    const current = previous?.conditions.find(c => c.type === observation.type)
    if (current && current.status === observation.status && current.message === observation.message) return
    const status = sourceStatus(entry.object, {
      serviceUrlTemplate: this.#options.serviceUrlTemplate,
      now: new Date(),
      previous,
      observed: [observation]
    })
    try {
      await store.write({ kind: 'status', key, status, expectedVersion: entry.resourceVersion })
    } catch (error) {
      // A newer spec, or the bucket moved: the next owner or the next change reconciles again.
      this.#done.delete(key)
      this.#options.log('warn', 'could not write a source status', { source: key, error: (error as Error).message })
    }
  }

  #scheduleRetry(key: string): void {
    const failures = (this.#failures.get(key) ?? 0) + 1
    this.#failures.set(key, failures)
    const delay = Math.min(this.#options.maxBackoffMs ?? 30_000, 1_000 * 2 ** Math.min(failures - 1, 5))
    const timer = setTimeout(() => {
      this.#retry.delete(key)
      this.#consider(key)
    }, delay)
    timer.unref()
    this.#retry.set(key, timer)
  }
}
