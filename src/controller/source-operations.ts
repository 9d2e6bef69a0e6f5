import { isPaused } from '../api/index.ts'
import { lagSourceOf } from '../autoscale/index.ts'
import { parseResetTarget, readOffsets, resetOffsets } from '../kafka-source/index.ts'
import type { LagQuery } from '../lag/index.ts'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { sourceNet, unresolvedMessage } from '../secrets/index.ts'
import type { SecretKey, SourceNet } from '../secrets/index.ts'
import { isKafkaSource } from '../store/index.ts'
import type { ResourceStore, StoredEntry, StoredKafkaSource } from '../store/index.ts'

/** `shoal offsets`: a KafkaSource's committed offsets and lag, and moving them while it is paused. */
export interface SourceOffsets {
  read(namespace: string, name: string): Promise<unknown>
  reset(namespace: string, name: string, to: unknown): Promise<unknown>
}

/**
 * The offsets operations over this replica's copy of the store; any replica answers them (they talk to Kafka,
 * with the source's `spec.net` credentials opened by `secretKey`).
 */
export function sourceOffsets(store: ResourceStore, secretKey?: SecretKey): SourceOffsets {
  const net = sourceNet(store, secretKey)
  const find = async (namespace: string, name: string): Promise<StoredEntry<StoredKafkaSource>> => {
    const entry = await store.get(`KafkaSource/${namespace}/${name}`)
    if (!entry || !isKafkaSource(entry))
      throw new ShoalError(ErrorCodes.NOT_FOUND, `kafkasources.sources.knative.dev "${name}" not found`)
    return entry
  }
  return {
    async read(namespace, name) {
      const entry = await find(namespace, name)
      const view = await readOffsets(queryOf(entry, net))
      return { source: name, namespace, paused: isPaused(entry.object.metadata), ...view }
    },
    async reset(namespace, name, to) {
      const target = typeof to === 'string' ? parseResetTarget(to) : undefined
      if (target === undefined) {
        const message = `must be earliest, latest, an ISO-8601 time or milliseconds since the epoch, not ${JSON.stringify(to)}`
        throw new ShoalError(ErrorCodes.INVALID, `reset: ${message}`, { fields: [{ path: 'reset', message }] })
      }
      const entry = await find(namespace, name)
      if (!isPaused(entry.object.metadata)) {
        throw new ShoalError(
          ErrorCodes.CONFLICT,
          `kafkasource ${name} is not paused: offsets move only while it is (shoal pause kafkasource ${name} -n ${namespace})`
        )
      }
      const view = await resetOffsets(queryOf(entry, net), target)
      return { source: name, namespace, paused: true, ...view }
    }
  }
}

/** The lag query of a source, with its resolved `spec.net`; a `net` that cannot be resolved is refused, naming the field. */
function queryOf(entry: StoredEntry<StoredKafkaSource>, netOf: SourceNet): LagQuery {
  const net = netOf(entry)
  if (net.kind === 'unresolved') {
    const message = unresolvedMessage(net)
    throw new ShoalError(
      ErrorCodes.KAFKA,
      `kafkasource ${entry.object.metadata.name} cannot reach its brokers: ${message}`,
      { fields: [{ path: net.field, message: net.reason }] }
    )
  }
  return lagSourceOf(entry, net).query
}
