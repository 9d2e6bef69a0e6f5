/**
 * A dead dispatcher's members taken out of a source's consumer group at once. Every Shoal member is static (it has a
 * group instance id, `<dispatcher>-<index>`, so that a restarted dispatcher takes its partitions back without a
 * rebalance), and the coordinator keeps a static member until its session times out, however long the group's
 * rebalance waits for it. When the coordinator itself moves (its broker lost, or cut off with a zone), the new one
 * gives every member a fresh session when it loads the group: the lab's zone-b cut waited until about 11.5 s for the
 * members of a dispatcher the controllers had declared dead at 6 s (docs/faults.md). Every controller replica
 * removes them when it declares their dispatcher dead, as Kafka's admin removes members: LeaveGroup naming the
 * instance ids. It names each member's id too, so that a member that rejoined under the same instance id since it was
 * described (the dispatcher back) is refused as fenced, not removed.
 */
import { ConnectionPool, FindCoordinatorKeyTypes, leaveGroupV5 } from '@platformatic/kafka'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { KafkaAdmin, kafkaClientOptions, kafkaConnectionTimeouts, kafkaSecurityOptions } from '../kafka/index.ts'
import type { KafkaClientSecurity, KafkaConnection } from '../kafka/index.ts'

/** The group instance id of a dispatcher's member `index` of a source: `<dispatcher>-<index>`. */
export function memberInstanceId(dispatcherId: string, index: number): string {
  return `${dispatcherId}-${index}`
}

/** Whether a group instance id is one of `dispatcherId`'s members' (`memberInstanceId`). */
export function isMemberOf(dispatcherId: string, groupInstanceId: string): boolean {
  return groupInstanceId.startsWith(`${dispatcherId}-`) && /^\d+$/.test(groupInstanceId.slice(dispatcherId.length + 1))
}

/** Which members of which group `removeStaticMembers` removes, on which cluster, and why. */
export interface RemoveStaticMembersOptions {
  /** The source's cluster, and the client id to name this client by. */
  readonly connection: KafkaConnection
  readonly security?: KafkaClientSecurity
  readonly groupId: string
  /** Which members to remove, by group instance id. */
  readonly remove: (groupInstanceId: string) => boolean
  /** Asked right before the LeaveGroup is sent: false stops (the dispatcher came back, the caller stopped). */
  readonly stillWanted?: () => boolean
  /** Told to the coordinator (LeaveGroup's reason, in the broker's log). */
  readonly reason: string
}

/** Removes the group's static members `remove` names; resolves to the instance ids the coordinator removed. */
export async function removeStaticMembers(options: RemoveStaticMembersOptions): Promise<string[]> {
  const { connection, security, groupId } = options
  const clientId = `${connection.clientId}-members`
  const admin = new KafkaAdmin({
    ...kafkaClientOptions(clientId, connection.brokers, 'request'),
    ...kafkaSecurityOptions(security),
    retries: 3,
    retryDelay: 250
  })
  const pool = new ConnectionPool(clientId, {
    ...kafkaSecurityOptions(security),
    ...kafkaConnectionTimeouts('request')
  })
  try {
    const group = (await admin.describeGroups({ groups: [groupId] })).get(groupId)
    const members = [...(group?.members.values() ?? [])].flatMap(m =>
      typeof m.groupInstanceId === 'string' && options.remove(m.groupInstanceId)
        ? [{ memberId: m.id, groupInstanceId: m.groupInstanceId, reason: options.reason }]
        : []
    )
    if (members.length === 0) return []
    const [coordinator] = await admin.findCoordinator({ keyType: FindCoordinatorKeyTypes.GROUP, keys: [groupId] })
    if (coordinator === undefined) {
      throw new ShoalError(ErrorCodes.KAFKA, `no coordinator for the group ${groupId}`, { retriable: true })
    }
    const to = await pool.get({ host: coordinator.host, port: coordinator.port })
    if (options.stillWanted?.() === false) return []
    const answer = await leaveGroupV5.api.async(to, groupId, members).catch((error: unknown) => {
      // Some members refused (already gone, or rejoined as someone else): the answer still says who left.
      const response = (error as { response?: Awaited<ReturnType<typeof leaveGroupV5.api.async>> }).response
      if (response?.members === undefined || response.errorCode !== 0) throw error
      return response
    })
    return answer.members.flatMap(m => (m.errorCode === 0 && m.groupInstanceId ? [m.groupInstanceId] : []))
  } finally {
    await Promise.allSettled([admin?.close(), pool?.close()])
  }
}
