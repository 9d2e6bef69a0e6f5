// One process holding many consumer-group members, for bench/many-members.ts: either Shoal's SourceRunners
// (@platformatic/kafka, one member per vreplica) or the same number of kafkajs consumers (the peer). Records are
// "delivered" by a function that resolves at once: this measures the Kafka client per member, not HTTP.
//
//   forked by bench/many-members.ts; not run by hand
import { Kafka, logLevel } from 'kafkajs'
import { SourceRunner } from '../src/kafka-source/index.ts'

/** What the child tells its parent. */
export type ChildMessage =
  | { readonly type: 'ready'; readonly rssBytes: number }
  | { readonly type: 'progress'; readonly joined: number; readonly handled: number }
  | { readonly type: 'closed' }

export interface ChildArgs {
  readonly client: 'shoal' | 'kafkajs'
  readonly brokers: readonly string[]
  readonly topics: readonly string[]
  readonly membersPerSource: number
  readonly run: string
}

const args = JSON.parse(process.argv[2]!) as ChildArgs
let handled = 0
const send = (message: ChildMessage) => process.send!(message)

const closers: Array<() => Promise<void>> = []
const joinedOf: Array<() => number> = []
const runners: SourceRunner[] = []

gc?.()
send({ type: 'ready', rssBytes: process.memoryUsage().rss })

if (args.client === 'shoal') {
  for (const [i, topic] of args.topics.entries()) {
    const runner = new SourceRunner({
      brokers: args.brokers,
      source: {
        key: `KafkaSource/bench/${topic}`,
        groupId: `${args.run}-shoal-${i}`,
        topics: [topic],
        initialOffset: 'earliest',
        ordering: 'unordered'
      },
      vreplicas: args.membersPerSource,
      dispatcherId: 'bench-0',
      log: (level, message, fields) => {
        if (level !== 'info') console.error(level, message, JSON.stringify(fields))
      },
      deliver: async () => {
        handled++
        return 'delivered'
      }
    })
    runners.push(runner)
    closers.push(() => runner.close({ leaveGroup: true, drainMs: 1_000 }))
    joinedOf.push(() => runner.status().members.filter(m => m.generationId > 0 && m.partitions.length > 0).length)
  }
} else {
  const kafka = new Kafka({ clientId: `${args.run}-kafkajs`, brokers: [...args.brokers], logLevel: logLevel.NOTHING })
  const starts: Array<Promise<void>> = []
  for (const [i, topic] of args.topics.entries()) {
    for (let m = 0; m < args.membersPerSource; m++) {
      const consumer = kafka.consumer({
        groupId: `${args.run}-kafkajs-${i}`,
        sessionTimeout: 6_000,
        heartbeatInterval: 1_000
      })
      let joined = false
      consumer.on(consumer.events.GROUP_JOIN, event => {
        joined = (event.payload.memberAssignment[topic]?.length ?? 0) > 0
      })
      closers.push(() => consumer.disconnect())
      joinedOf.push(() => (joined ? 1 : 0))
      starts.push(
        (async () => {
          await consumer.connect()
          await consumer.subscribe({ topics: [topic], fromBeginning: true })
          await consumer.run({
            eachBatch: async ({ batch }) => {
              handled += batch.messages.length
            }
          })
        })()
      )
    }
  }
  await Promise.all(starts)
}

const timer = setInterval(() => {
  send({ type: 'progress', joined: joinedOf.reduce((n, f) => n + f(), 0), handled })
}, 200)

async function onMessage(message: { type: 'gc' | 'close' | 'status' }): Promise<void> {
  if (message.type === 'status') {
    const { Admin } = await import('@platformatic/kafka')
    const admin = new Admin({ clientId: 'mm-debug', bootstrapBrokers: [...args.brokers] })
    for (const runner of runners) {
      const groupId = runner.status().groupId
      if (runner.status().members.some(m => m.partitions.length === 0)) {
        const group = (await admin.describeGroups({ groups: [groupId] })).get(groupId)
        for (const member of group?.members.values() ?? []) {
          console.error(
            'coordinator:',
            groupId,
            member.groupInstanceId,
            member.id,
            JSON.stringify([...(member.assignments?.values() ?? [])].map(a => a.partitions))
          )
        }
      }
      for (const m of runner.status().members) {
        if (m.generationId <= 0 || m.partitions.length === 0)
          console.error(
            'not assigned:',
            runner.status().groupId,
            JSON.stringify(m, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))
          )
      }
    }
    await admin.close()
    return
  }
  if (message.type === 'gc') {
    gc?.()
    return
  }
  clearInterval(timer)
  await Promise.allSettled(closers.map(close => close()))
  send({ type: 'closed' })
  process.exit(0)
}

process.on(
  'message',
  (message: { type: 'gc' | 'close' | 'status' }) =>
    void onMessage(message).catch(error => {
      console.error(error)
      process.exit(1)
    })
)
