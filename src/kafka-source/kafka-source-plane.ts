import { batchSettingsOf, keyTypeOf, parseFlowControl } from '../api/index.ts'
import type { KafkaSource } from '../api/index.ts'
import { deliveryTargetFor } from '../delivery/index.ts'
import type { DeliveryOutcome, DeliveryTarget } from '../delivery/index.ts'
import { securityFingerprint } from '../kafka/index.ts'
import type { PlaneActivity, PlaneContract, PlaneHost, ResourceUpdate, SourcePlane } from '../plane/index.ts'
import { resolveSourceNet, unresolvedMessage } from '../secrets/index.ts'
import type { NetResolution, SecretKey } from '../secrets/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { ContractRecord, StoredKafkaSource } from '../store/index.ts'
import { batchDelivery } from './batch-send.ts'
import { recordToEvent } from './record-to-event.ts'
import type { MappingOptions } from './record-to-event.ts'
import { SourceRunner } from './source-runner.ts'
import type { SourceRunnerCloseOptions } from './source-runner.ts'
import type { Batching, Deliver, Outcome, SourceObserver, SourceRecord } from './types.ts'

/** What only the KafkaSource plane takes; the rest comes from its dispatcher (PlaneHost). */
export interface KafkaSourcePlaneOptions {
  /** Sees every group member's records (metrics). */
  readonly observer?: SourceObserver
  /** Opens the Secrets of sources' `spec.net` (SASL/TLS to their brokers; docs/secrets.md). */
  readonly secretKey?: SecretKey
}

/** Records of one partition this dispatcher owns not handled yet (PartitionStatus.lag); not the group's lag. */
export interface OwnedPartitionLag {
  readonly topic: string
  readonly partition: number
  readonly lag: number
}

/** A KafkaSource running here: its members, its records in flight, the lag of each partition it owns. */
export interface KafkaSourceActivity extends PlaneActivity {
  readonly vreplicas: number
  readonly resourceVersion: string
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
 * contract's number of group members, delivering through the dispatcher's shared Deliverer (connection caps per
 * sink origin, a queue per source). It reads the sources' specs through the shared resources reader and runs
 * the version its contract names; a new version restarts that source's runner, a placement that goes stops it.
 */
export class KafkaSourcePlane implements SourcePlane {
  readonly kind = 'KafkaSource'
  readonly #host: PlaneHost
  readonly #options: KafkaSourcePlaneOptions
  readonly #resources = new Map<string, { offset: bigint; object: StoredKafkaSource }>()
  readonly #runners = new Map<string, Running>()
  #wanted: ReadonlyMap<string, ContractRecord> = new Map()
  #running = false
  /** Runners closing and not yet closed: a fence cuts their drain too. */
  readonly #closingRunners = new Set<SourceRunner>()
  #applying: Promise<void> = Promise.resolve()

  constructor(host: PlaneHost, options: KafkaSourcePlaneOptions = {}) {
    this.#host = host
    this.#options = options
    host.services.resources.subscribe('KafkaSource', update => this.#onSource(update))
    // A Secret changed: a source waiting for it may start, a running one may have to reconnect.
    host.services.resources.subscribe('Secret', () => {
      if (this.#wanted.size > 0) this.#schedule()
    })
  }

  /** Nothing of its own to read: the shared reader brings the sources. */
  start(): Promise<void> {
    return Promise.resolve()
  }

  /** Runs what the contract says (or nothing, while the dispatcher is fenced). */
  apply(change: PlaneContract): void {
    this.#wanted = change.contract
    this.#running = change.running
    // A fence stops every runner now, not once the reconciles queued before it (each may wait on a 10 s drain) are
    // done: what a fenced dispatcher still has on the wire is cut within the contract's drain.
    if (!change.running && change.drainMs !== undefined) {
      for (const { runner } of this.#runners.values()) runner.fence(change.drainMs)
      for (const runner of this.#closingRunners) runner.fence(change.drainMs)
    }
    this.#schedule()
  }

  async close(): Promise<void> {
    this.#running = false
    this.#wanted = new Map()
    this.#schedule()
    await this.#applying
  }

  /** Source keys with a runner, their members, their records in flight, and the lag of each partition they own. */
  activity(): KafkaSourceActivity[] {
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

  #onSource(update: ResourceUpdate): void {
    if (update.object === undefined) this.#resources.delete(update.key)
    else if (isKafkaSource(update.object))
      this.#resources.set(update.key, { offset: update.offset, object: update.object })
    if (this.#wanted.has(update.key)) this.#schedule()
  }

  /** A source's `spec.net` as client settings, from the Secrets of its namespace. */
  #netOf(object: StoredKafkaSource): NetResolution {
    return resolveSourceNet(object, key => this.#host.services.resources.secret(key), this.#options.secretKey)
  }

  #schedule(): void {
    this.#applying = this.#applying
      .then(() => this.#reconcile())
      .catch(error => {
        this.#host.log('error', 'applying the contract failed', { error: String(error) })
      })
  }

  async #reconcile(): Promise<void> {
    const wanted = this.#running ? this.#wanted : new Map<string, ContractRecord>()
    // Runners that stop drain and commit side by side: a dispatcher with many sources stops in one drain time.
    const closing: Promise<void>[] = []
    const forget = (key: string) => () => this.#host.services.deliverer.forgetSource(key)
    const close = (key: string, runner: SourceRunner, options: SourceRunnerCloseOptions) => {
      this.#runners.delete(key)
      this.#closingRunners.add(runner)
      closing.push(
        runner
          .close(options)
          .finally(() => this.#closingRunners.delete(runner))
          .then(forget(key))
      )
    }
    for (const [key, running] of this.#runners) {
      const placement = wanted.get(key)
      if (!placement || running.runner.fenced) {
        // Leaving the group hands its partitions over at once; a fenced dispatcher keeps its static ids. A runner
        // fenced is spent: if its placement is still wanted (unfenced since), a new one starts below.
        close(key, running.runner, { leaveGroup: this.#running && !running.runner.fenced })
      } else {
        const moved = placement.resourceVersion !== running.resourceVersion
        // A newer spec not read yet: the resources record will call us again.
        const newer = moved ? this.#specAt(key, placement.resourceVersion) : undefined
        if (this.#securityChanged(key, running) || (newer !== undefined && runnerSpecOf(newer) !== running.spec)) {
          // Members that will come back under their static ids rejoin at once; the others leave the group.
          close(key, running.runner, { leaveGroup: false, rejoining: placement.vreplicas })
        } else if (!moved || newer !== undefined) {
          // Only the vreplica count (or nothing the runner uses) changed, as on every `shoal scale` and autoscaler
          // step: the members that stay go on untouched, instead of all of them closing and rejoining.
          if (moved) this.#runners.set(key, { ...running, resourceVersion: placement.resourceVersion })
          running.runner
            .setVReplicas(placement.vreplicas)
            .catch(error => this.#host.log('error', 'scaling a source failed', { source: key, error: String(error) }))
        }
      }
    }
    await Promise.all(closing)
    // The contract as it stands now, not before the closes: a fence (or a new contract) may have come meanwhile, and
    // a runner started from the old one would run while fenced.
    for (const [key, placement] of this.#running ? this.#wanted : new Map<string, ContractRecord>()) {
      if (this.#runners.has(key)) continue
      const object = this.#specAt(key, placement.resourceVersion)
      if (!object) continue // its spec has not been read yet: the resources record will call us again
      const source = object
      const net = this.#netOf(object)
      if (net.kind === 'unresolved') {
        // Not started until its Secrets resolve (a Secret record calls us again); the status says which field.
        this.#host.services.errors.note(key, `cannot connect to the source's brokers: ${unresolvedMessage(net)}`)
        continue
      }
      // Everything the runner is kept with is worked out before it starts: a runner started and not kept would
      // never be closed (its members would hold their connections for the process's life).
      const spec = runnerSpecOf(object)
      const security = securityFingerprint(net.security)
      const deliver = this.#deliverFor(source)
      const batching = this.#batchingFor(source)
      const keyType = keyTypeOf(source.metadata)
      if (keyType.warning !== undefined) this.#host.log('warn', keyType.warning, { source: key })
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
        dispatcherId: this.#host.dispatcherId,
        deliver,
        ...(batching === undefined ? {} : { batching }),
        log: this.#host.log,
        ...(this.#options.observer === undefined ? {} : { observer: this.#options.observer })
      })
      this.#runners.set(key, { resourceVersion: placement.resourceVersion, spec, runner, security })
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

  /**
   * With the batch annotations: each batch of records as one batched-mode request (poison records go to the
   * dead letter sink on their own, as without batches); without them, undefined.
   */
  #batchingFor(source: KafkaSource): Batching | undefined {
    const limits = batchSettingsOf(source.metadata)
    if (limits === undefined) return undefined
    const key = `KafkaSource/${source.metadata.namespace}/${source.metadata.name}`
    const resolution = deliveryTargetFor(source, { serviceUrlTemplate: this.#host.serviceUrlTemplate })
    const ref = { namespace: source.metadata.namespace, name: source.metadata.name }
    const options = mappingOptionsOf(source)
    const sendBatch = batchDelivery(this.#host.services.deliverer, ref, options)
    const deliver = async (
      records: readonly SourceRecord[],
      signal: AbortSignal,
      wireSignal: AbortSignal
    ): Promise<readonly Outcome[]> => {
      if (resolution.kind === 'unresolved') {
        this.#host.services.errors.note(key, `the sink cannot be resolved: ${resolution.field}: ${resolution.reason}`)
        throw new Error(`${key}: ${resolution.field}: ${resolution.reason}`)
      }
      return sendBatch(records, signal, wireSignal, resolution.target)
    }
    return { limits, deliver }
  }

  #deliverFor(source: KafkaSource): Deliver {
    const key = `KafkaSource/${source.metadata.namespace}/${source.metadata.name}`
    const resolution = deliveryTargetFor(source, { serviceUrlTemplate: this.#host.serviceUrlTemplate })
    const ref = { namespace: source.metadata.namespace, name: source.metadata.name }
    const options = mappingOptionsOf(source)
    // Not async: a delivery held by a slow sink adds one promise reaction here, not a suspended frame.
    return (record: SourceRecord, signal: AbortSignal, wireSignal: AbortSignal): Promise<Outcome> => {
      if (resolution.kind === 'unresolved') {
        // Not handled: the runner retries it, so nothing is lost while the sink cannot be resolved.
        this.#host.services.errors.note(key, `the sink cannot be resolved: ${resolution.field}: ${resolution.reason}`)
        return Promise.reject(new Error(`${key}: ${resolution.field}: ${resolution.reason}`))
      }
      const target: DeliveryTarget = resolution.target
      const mapped = recordToEvent(record, ref, options)
      const delivering =
        mapped.kind === 'poison'
          ? this.#host.services.deliverer.deadLetter(mapped.fallback, target, mapped.reason, signal, wireSignal)
          : this.#host.services.deliverer.deliver(mapped.event, target, signal, wireSignal, record.fetchedAt)
      return delivering.then(handled)
    }
  }
}

/** How a source's records become events: its ceOverrides and its key-type label. */
function mappingOptionsOf(source: KafkaSource): MappingOptions {
  return { ceOverrides: source.spec.ceOverrides, keyType: keyTypeOf(source.metadata).keyType }
}

/** What the runner counts; an aborted delivery is not handled (the runner delivers the record again). */
function handled(outcome: DeliveryOutcome): Outcome {
  if (outcome.kind === 'aborted') throw new Error('delivery aborted')
  return outcome.kind
}

/** A KafkaSource's spec as its runner and its deliveries use it: everything but the vreplica count. */
function runnerSpecOf(object: StoredKafkaSource): string {
  const { consumers: _consumers, ...rest } = object.spec
  // The batch and flow control annotations shape its deliveries too (its delivery target is built with the runner):
  // a change restarts the runner, as a spec change does. Without them the string is the spec's, as before.
  const batching = batchSettingsOf(object.metadata)
  const flow = parseFlowControl(object.metadata.annotations)
  // So does the key-type label (its deliveries map keys by it).
  const { keyType } = keyTypeOf(object.metadata)
  return JSON.stringify({
    ...rest,
    ...(batching === undefined ? {} : { batching }),
    ...(flow.kind === 'flow' ? { flow: flow.flow } : {}),
    ...(keyType === 'string' ? {} : { keyType })
  })
}
