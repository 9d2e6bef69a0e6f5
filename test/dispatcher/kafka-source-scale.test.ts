// A scale step changes only a KafkaSource's vreplica count: the dispatcher scales the running members in place,
// so those that stay keep their group membership (the same member id at the coordinator) and their partitions,
// rather than every member closing and rejoining — a rebalance of the whole group on every step.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Admin } from '@platformatic/kafka'
import { ensureTopics } from '../../src/kafka/index.ts'
import { scaleKafkaSource, startControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'

const KS = '/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources'

/** The group's members at the coordinator: static id → member id, once it is stable. */
async function stableMembers(group: string): Promise<Map<string, string> | undefined> {
  const admin = new Admin({ clientId: `${group}-describe`, bootstrapBrokers: brokers() })
  try {
    const described = (await admin.describeGroups({ groups: [group] })).get(group)
    if (String(described?.state).toLowerCase() !== 'stable') return undefined
    return new Map([...(described?.members.values() ?? [])].map(m => [m.groupInstanceId ?? '', m.id]))
  } finally {
    await admin.close()
  }
}

describe('a KafkaSource scaled', () => {
  it('keeps the members that stay in the group as they were: same member ids after 1 → 2 → 1', async () => {
    const prefix = uniqueName('scale-in-place')
    const topic = `${prefix}-topic`
    const group = `${prefix}-group`
    await ensureTopics({ brokers: brokers(), clientId: prefix }, [{ name: topic, partitions: 4, configs: {} }])
    const controller = await startControllerProcess(prefix)
    let dispatcher: DispatcherProcess | undefined
    try {
      dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10)
      const created = await http(
        'POST',
        `${controller.url}${KS}`,
        `apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: scaled}\nspec:\n  bootstrapServers: [${brokers().join(',')}]\n  topics: [${topic}]\n  consumerGroup: ${group}\n  consumers: 1\n  initialOffset: earliest\n  sink: {uri: "http://127.0.0.1:9/"}\n`
      )
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const members = (n: number) =>
        eventually(
          async () => {
            const now = await stableMembers(group)
            return now?.size === n ? now : undefined
          },
          60_000,
          `${n} stable member(s)`
        )
      const first = (await members(1)).get('dispatcher-0-0')
      assert.ok(first, 'dispatcher-0-0 is a member')
      await scaleKafkaSource(controller.url, 'scaled', 2)
      assert.equal((await members(2)).get('dispatcher-0-0'), first, 'member 0 kept its membership scaling up')
      await scaleKafkaSource(controller.url, 'scaled', 1)
      assert.equal((await members(1)).get('dispatcher-0-0'), first, 'member 0 kept its membership scaling down')
    } finally {
      await dispatcher?.stop()
      await controller.stop()
    }
  })
})
