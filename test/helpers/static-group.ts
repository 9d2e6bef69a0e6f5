// Static members of a real consumer group, as a dispatcher's are (a group instance id each), for the tests of taking a
// dead dispatcher's members out: joined with a long session, "killed" without leaving, and the group as the
// coordinator describes it (DescribeGroups, the library's admin).
import { Admin, Consumer } from '@platformatic/kafka'
import { brokers } from './kafka.ts'

export class StaticGroup {
  readonly #consumers: Consumer[] = []
  readonly #admin = new Admin({ clientId: 'test-static-group-admin', bootstrapBrokers: brokers() })

  /** Joins `groupId` on `topic` as the static member `instanceId`; resolves once it consumes. */
  async join(groupId: string, topic: string, instanceId: string): Promise<Consumer> {
    const consumer = new Consumer({
      clientId: `test-${instanceId}`,
      groupId,
      groupInstanceId: instanceId,
      bootstrapBrokers: brokers(),
      // Long enough that only a removal takes the member out within a test.
      sessionTimeout: 45_000,
      heartbeatInterval: 1_000
    })
    this.#consumers.push(consumer)
    // A closed member's client and stream may still fail once, against its closed connections: not the test's failure.
    consumer.on('error', () => undefined)
    const stream = await consumer.consume({ topics: [topic] })
    stream.on('error', () => undefined)
    return consumer
  }

  /**
   * The member's process gone: its client stops heartbeating without leaving (the client sends its own LeaveGroup
   * whenever it has a member id: it is told it has none), so the member stays in the group.
   */
  async die(consumer: Consumer): Promise<void> {
    consumer.memberId = null
    await new Promise<void>(resolve => consumer.leaveGroup(false, () => resolve()))
    await consumer.close()
  }

  /** The group's members' instance ids, sorted, as the coordinator describes them. */
  async instanceIds(groupId: string): Promise<Array<string | null | undefined>> {
    const members = (await this.#admin.describeGroups({ groups: [groupId] })).get(groupId)?.members.values()
    return [...(members ?? [])].map(m => m.groupInstanceId).sort()
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#consumers.map(c => c.close(true)))
    await this.#admin.close()
  }
}
