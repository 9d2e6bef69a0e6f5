import type { KafkaSource } from '../api/index.ts'
import { Deliverer, deliveryTargetFor } from '../delivery/index.ts'
import type { DeliveryObserver, DeliveryOutcome, DeliveryTarget, SinkPolicy } from '../delivery/index.ts'
import { LogTailer, securityFingerprint } from '../kafka/index.ts'
import { resolveSourceNet, unresolvedMessage } from '../secrets/index.ts'
import type { NetResolution, SecretKey } from '../secrets/index.ts'
import { SourceRunner, recordToEvent } from '../source/index.ts'
import type { Deliver, Outcome, SourceObserver, SourceRecord } from '../source/index.ts'
import { decodeValue, isKafkaSource, storeNames, storedObjectOf } from '../store/index.ts'
import type { ContractRecord, StoredKafkaSource, StoredObject } from '../store/index.ts'
import { DeliveryErrorReporter } from './delivery-error-reporter.ts'
import type { RunningDispatcher } from './dispatcher.ts'
import type { DispatcherLog } from './log.ts'

export interface KafkaSourcePlaneOptions {
  /** The Kafka that holds Shoal's store (each source names its own bootstrap servers). */
  readonly brokers: readonly string[]
  readonly prefix?: string
  readonly dispatcherId: string
  readonly serviceUrlTemplate: string
  readonly maxConnectionsPerOrigin?: number
  readonly observer?: DeliveryObserver & SourceObserver
  /** Refuses sinks at forbidden addresses when connecting (multi-tenant installations; docs/security.md). */
  readonly sinkPolicy?: SinkPolicy
  /** Opens the Secrets of sources' `spec.net` (SASL/TLS to their brokers; docs/secrets.md). */
  readonly secretKey?: SecretKey
  readonly log: DispatcherLog
}

/** Records of one partition this dispatcher owns not handled yet (PartitionStatus.lag); not the group's lag. */
export interface OwnedPartitionLag {
  readonly topic: string
  readonly partition: number
  readonly lag: number
}

export interface KafkaSourceActivity {
  readonly source: string
  readonly vreplicas: number
  readonly resourceVersion: string
  readonly inFlight: number
  readonly partitions: readonly OwnedPartitionLag[]
}

interface Running {
  readonly resourceVersion: string
  /** What of its spec the runner was built from (all of it but the vreplica count): see `runnerSpecOf`. */
  readonly spec: string
  readonly runner: SourceRunner
  /** Which credentials it connects with (securityFingerprint): a changed Secret restarts it. */
  readonly security: string
}

/**
 * The KafkaSource data plane of one dispatcher: for each KafkaSource in its contract, a SourceRunner with the
 * contract's number of group members, delivering through one shared Deliverer (connection caps per sink
 * origin, a queue per source). It reads the sources' specs from the store's resources topic and runs the
 * version its contract names; a new version restarts that source's runner, a placement that goes stops it.
 */
export class KafkaSourcePlane {
  readonly #options: KafkaSourcePlaneOptions
  readonly #resources = new Map<string, { offset: bigint; object: StoredKafkaSource }>()
  /** The Secrets (sealed, as stored) that sources' `spec.net` may refer to. */
  readonly #secrets = new Map<string, StoredObject>()
  readonly #tailer: LogTailer
  readonly #deliverer: Deliverer
  /** Each source's last delivery error, for its status (DESIGN: records stay small — one per source). */
  readonly #errors: DeliveryErrorReporter
  readonly #runners = new Map<string, Running>()
  #wanted: ReadonlyMap<string, ContractRecord> = new Map()
  #running = false
  #applying: Promise<void> = Promise.resolve()

  constructor(options: KafkaSourcePlaneOptions) {
    this.#options = options
    const topic = storeNames(options.prefix).resourcesTopic
    this.#tailer = new LogTailer({
      connection: { brokers: options.brokers, clientId: `shoal-${options.dispatcherId}-resources` },
      topics: [topic],
      onRecord: record => {
        const key = record.key?.toString('utf8')
        if (key?.startsWith('Secret/')) return this.#onSecret(key, decodeValue(record.value, record.headers))
        if (!key?.startsWith('KafkaSource/')) return
        const decoded = decodeValue(record.value, record.headers)
        const object = decoded.kind === 'value' ? storedObjectOf(decoded.value) : undefined
        if (decoded.kind === 'tombstone') this.#resources.delete(key)
        else if (object !== undefined && isKafkaSource(object)) {
          this.#resources.set(key, { offset: record.offset, object })
        }
        if (this.#wanted.has(key)) this.#schedule()
      },
      onError: error => options.log('warn', 'reading the sources failed; retrying', { error: String(error) })
    })
    this.#errors = new DeliveryErrorReporter({
      connection: { brokers: options.brokers, clientId: `shoal-${options.dispatcherId}` },
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      dispatcher: options.dispatcherId,
      ...(options.observer === undefined ? {} : { next: options.observer })
    })
    this.#deliverer = new Deliverer({
      ...(options.maxConnectionsPerOrigin === undefined
        ? {}
        : { maxConnectionsPerOrigin: options.maxConnectionsPerOrigin }),
      ...(options.sinkPolicy === undefined ? {} : { sinkPolicy: options.sinkPolicy }),
      observer: this.#errors
    })
  }

  async start(): Promise<void> {
    await this.#tailer.start()
    await this.#errors.start()
  }

  /** Runs what the contract says (or nothing, while the dispatcher is fenced). */
  apply(contract: ReadonlyMap<string, ContractRecord>, running: boolean): void {
    this.#wanted = new Map([...contract].filter(([key]) => key.startsWith('KafkaSource/')))
    this.#running = running
    this.#schedule()
  }

  async close(): Promise<void> {
    this.#running = false
    this.#wanted = new Map()
    this.#schedule()
    await this.#applying
    await this.#deliverer.close()
    await this.#errors.close()
    await this.#tailer.close()
  }

  /** The dispatcher's one Deliverer: the PingSource plane delivers through it too (connection caps per origin). */
  get deliverer(): Deliverer {
    return this.#deliverer
  }

  /** Source keys with a runner, their members, their records in flight, and the lag of each partition they own. */
  status(): KafkaSourceActivity[] {
    return [...this.#runners].map(([source, r]) => {
      const status = r.runner.status()
      const partitions: OwnedPartitionLag[] = []
      for (const member of status.members) {
        for (const p of member.partitions) {
          if (p.lag !== undefined) partitions.push({ topic: p.topic, partition: p.partition, lag: Number(p.lag) })
        }
      }
      return {
        source,
        vreplicas: status.vreplicas,
        resourceVersion: r.resourceVersion,
        inFlight: status.members.reduce((n, m) => n + m.inFlight, 0),
        partitions
      }
    })
  }

  #onSecret(key: string, decoded: ReturnType<typeof decodeValue>): void {
    if (decoded.kind === 'tombstone') this.#secrets.delete(key)
    else if (decoded.kind === 'value') this.#secrets.set(key, storedObjectOf(decoded.value))
    else return
    if (this.#wanted.size > 0) this.#schedule()
  }

  /** A source's `spec.net` as client settings, from the Secrets of its namespace. */
  #netOf(object: StoredKafkaSource): NetResolution {
    return resolveSourceNet(object, key => this.#secrets.get(key), this.#options.secretKey)
  }

  #schedule(): void {
    this.#applying = this.#applying
      .then(() => this.#reconcile())
      .catch(error => {
        this.#options.log('error', 'applying the contract failed', { error: String(error) })
      })
  }

  async #reconcile(): Promise<void> {
    const wanted = this.#running ? this.#wanted : new Map<string, ContractRecord>()
    // Runners that stop drain and commit side by side: a dispatcher with many sources stops in one drain time.
    const closing: Promise<void>[] = []
    for (const [key, running] of this.#runners) {
      const placement = wanted.get(key)
      if (!placement) {
        this.#runners.delete(key)
        // Leaving the group hands its partitions over at once; a fenced dispatcher keeps its static ids.
        closing.push(running.runner.close({ leaveGroup: this.#running }))
      } else {
        const moved = placement.resourceVersion !== running.resourceVersion
        // A newer spec not read yet: the resources record will call us again.
        const newer = moved ? this.#specAt(key, placement.resourceVersion) : undefined
        if (this.#securityChanged(key, running) || (newer !== undefined && runnerSpecOf(newer) !== running.spec)) {
          // Members that will come back under their static ids rejoin at once; the others leave the group.
          this.#runners.delete(key)
          closing.push(running.runner.close({ leaveGroup: false, rejoining: placement.vreplicas }))
        } else if (!moved || newer !== undefined) {
          // Only the vreplica count (or nothing the runner uses) changed, as on every `shoal scale` and autoscaler
          // step: the members that stay go on untouched, instead of all of them closing and rejoining.
          if (moved) this.#runners.set(key, { ...running, resourceVersion: placement.resourceVersion })
          running.runner
            .setVReplicas(placement.vreplicas)
            .catch(error =>
              this.#options.log('error', 'scaling a source failed', { source: key, error: String(error) })
            )
        }
      }
    }
    await Promise.all(closing)
    for (const [key, placement] of wanted) {
      if (this.#runners.has(key)) continue
      const object = this.#specAt(key, placement.resourceVersion)
      if (!object) continue // its spec has not been read yet: the resources record will call us again
      const source = object
      const net = this.#netOf(object)
      if (net.kind === 'unresolved') {
        // Not started until its Secrets resolve (a Secret record calls us again); the status says which field.
        this.#errors.note(key, `cannot connect to the source's brokers: ${unresolvedMessage(net)}`)
        continue
      }
      const deliver = this.#deliverFor(source)
      const runner = new SourceRunner({
        brokers: source.spec.bootstrapServers,
        ...(net.security === undefined ? {} : { security: net.security }),
        source: {
          key,
          groupId: source.spec.consumerGroup,
          topics: source.spec.topics,
          initialOffset: source.spec.initialOffset,
          ordering: source.spec.ordering,
          ...(source.spec.maxInFlight === undefined ? {} : { maxInFlight: source.spec.maxInFlight })
        },
        vreplicas: placement.vreplicas,
        dispatcherId: this.#options.dispatcherId,
        deliver,
        log: this.#options.log,
        ...(this.#options.observer === undefined ? {} : { observer: this.#options.observer })
      })
      this.#runners.set(key, {
        resourceVersion: placement.resourceVersion,
        spec: runnerSpecOf(object),
        runner,
        security: securityFingerprint(net.security)
      })
    }
  }

  /** Whether a running source's Secrets now say something else (new credentials, or none it can use). */
  #securityChanged(key: string, running: Running): boolean {
    const object = this.#resources.get(key)?.object
    if (object === undefined) return false
    const net = this.#netOf(object)
    return net.kind === 'unresolved' || securityFingerprint(net.security) !== running.security
  }

  /** The source as stored at the contract's resourceVersion or later (a later one is as good: it will come). */
  #specAt(key: string, resourceVersion: string): StoredKafkaSource | undefined {
    const stored = this.#resources.get(key)
    return stored && stored.offset >= BigInt(resourceVersion) ? stored.object : undefined
  }

  #deliverFor(source: KafkaSource): Deliver {
    const key = `KafkaSource/${source.metadata.namespace}/${source.metadata.name}`
    const resolution = deliveryTargetFor(source, { serviceUrlTemplate: this.#options.serviceUrlTemplate })
    const ref = { namespace: source.metadata.namespace, name: source.metadata.name }
    const options = { ceOverrides: source.spec.ceOverrides }
    // Not async: a delivery held by a slow sink adds one promise reaction here, not a suspended frame.
    return (record: SourceRecord, signal: AbortSignal, wireSignal: AbortSignal): Promise<Outcome> => {
      if (resolution.kind === 'unresolved') {
        // Not handled: the runner retries it, so nothing is lost while the sink cannot be resolved.
        this.#errors.note(key, `the sink cannot be resolved: ${resolution.field}: ${resolution.reason}`)
        return Promise.reject(new Error(`${key}: ${resolution.field}: ${resolution.reason}`))
      }
      const target: DeliveryTarget = resolution.target
      const mapped = recordToEvent(record, ref, options)
      const delivering =
        mapped.kind === 'poison'
          ? this.#deliverer.deadLetter(mapped.fallback, target, mapped.reason, signal, wireSignal)
          : this.#deliverer.deliver(mapped.event, target, signal, wireSignal, record.fetchedAt)
      return delivering.then(handled)
    }
  }
}

/** What the runner counts; an aborted delivery is not handled (the runner delivers the record again). */
function handled(outcome: DeliveryOutcome): Outcome {
  if (outcome.kind === 'aborted') throw new Error('delivery aborted')
  return outcome.kind
}

/**
 * Starts the KafkaSource data plane of a running dispatcher and keeps it in step with the dispatcher's
 * contract and fencing. Close the plane before the dispatcher, so deliveries drain and offsets are committed
 * while the dispatcher still heartbeats.
 */
export async function startKafkaSourcePlane(
  dispatcher: RunningDispatcher,
  options: Omit<KafkaSourcePlaneOptions, 'dispatcherId'>
): Promise<KafkaSourcePlane> {
  const plane = new KafkaSourcePlane({ ...options, dispatcherId: dispatcher.id })
  await plane.start()
  const apply = () => plane.apply(dispatcher.contract, dispatcher.running)
  dispatcher.on('contract', apply)
  dispatcher.on('fenced', apply)
  dispatcher.on('unfenced', apply)
  apply()
  return plane
}

/** A KafkaSource's spec as its runner and its deliveries use it: everything but the vreplica count. */
function runnerSpecOf(object: StoredKafkaSource): string {
  const { consumers: _consumers, ...rest } = object.spec
  return JSON.stringify(rest)
}
