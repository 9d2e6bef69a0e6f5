// Many consumer-group members in one process: what @platformatic/kafka (Shoal's client, one member per vreplica)
// costs per member against kafkajs consumers doing the same, in one run. For each level, a child process starts
// `sources` groups of `members` members each on topics of 12 partitions already filled; the parent reads, from
// /proc, the child's RSS before any member, once every member holds partitions and every record is handled
// (after a GC), its idle CPU over `--idle-s` seconds (heartbeats, empty fetches), its open sockets, and the time
// from start until every member holds partitions and every record is handled.
//
//   npm run bench:many-members                  # levels 12 (12×1), 48 (12×4), 192 (24×8), both clients
//   npm run bench:many-members -- --levels 12x1,48x4 --records 1200 --idle-s 10 --limit-s 90 --skip-peer
import { fork } from 'node:child_process'
import { readdirSync, readlinkSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { ensureTopics } from '../src/kafka/index.ts'
import { Producer } from '@platformatic/kafka'
import { cpuSeconds, machine, rssBytes, sleep, startKafka } from './kafka-source-harness.ts'
import type { ChildArgs, ChildMessage } from './many-members-child.ts'

const { values } = parseArgs({
  options: {
    levels: { type: 'string', default: '12x1,48x4,192x8' },
    records: { type: 'string', default: '1200' },
    'idle-s': { type: 'string', default: '10' },
    'skip-peer': { type: 'boolean', default: false },
    'limit-s': { type: 'string', default: '90' }
  }
})
const levels = values.levels.split(',').map(level => {
  const [total, per] = level.split('x').map(Number)
  if (!Number.isInteger(total) || !Number.isInteger(per) || total! % per! !== 0) {
    throw new Error(`--levels: "${level}" is not TOTALxPER with TOTAL a multiple of PER`)
  }
  return { members: total!, perSource: per!, sources: total! / per! }
})
const recordsPerTopic = Number(values.records)
const idleSeconds = Number(values['idle-s'])
const limitSeconds = Number(values['limit-s'])
const clients: Array<ChildArgs['client']> = values['skip-peer'] ? ['shoal'] : ['shoal', 'kafkajs']
const PARTITIONS = 12
const child = new URL('./many-members-child.ts', import.meta.url).pathname

const socketsOf = (pid: number) =>
  readdirSync(`/proc/${pid}/fd`).filter(fd => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')
    } catch {
      return false
    }
  }).length

async function fill(brokers: readonly string[], topics: readonly string[]): Promise<void> {
  await ensureTopics(
    { brokers, clientId: 'bench' },
    topics.map(name => ({ name, partitions: PARTITIONS, configs: {} }))
  )
  const producer = new Producer({ clientId: 'bench-producer', bootstrapBrokers: [...brokers], idempotent: true })
  try {
    for (const topic of topics) {
      const messages = Array.from({ length: recordsPerTopic }, (_, n) => ({
        topic,
        partition: n % PARTITIONS,
        key: Buffer.from(`k${n}`),
        value: Buffer.alloc(256, n & 0xff)
      }))
      await producer.send({ acks: -1, messages })
    }
  } finally {
    await producer.close()
  }
}

type Row =
  Measured | { readonly client: string; readonly members: number; readonly sources: number; readonly failed: string }

interface Measured {
  readonly client: string
  readonly members: number
  readonly sources: number
  readonly readyS: number
  readonly idleRss: number
  readonly rss: number
  readonly idleCpu: number
  readonly sockets: number
}

async function measure(args: ChildArgs, expected: number, members: number): Promise<Row> {
  const proc = fork(child, [JSON.stringify(args)], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  let last: Extract<ChildMessage, { type: 'progress' }> = { type: 'progress', joined: 0, handled: 0 }
  let readyRss = 0
  proc.on('message', (message: ChildMessage) => {
    if (message.type === 'progress') last = message
    if (message.type === 'ready') readyRss = message.rssBytes
  })
  const started = performance.now()
  const deadline = started + limitSeconds * 1000
  while (last.joined < members || last.handled < expected) {
    if (performance.now() > deadline) {
      // Reported as a row, not thrown: a client that never settles is a finding.
      proc.send({ type: 'status' })
      await sleep(500)
      proc.kill('SIGKILL')
      const failed = `${last.joined} of ${members} members assigned, ${last.handled} of ${expected} records handled after ${limitSeconds} s`
      return { client: args.client, members, sources: args.topics.length, failed }
    }
    await sleep(100)
  }
  const readyS = (performance.now() - started) / 1000
  await sleep(2_000) // the last commits and fetches settle
  proc.send({ type: 'gc' })
  await sleep(500)
  const cpuBefore = cpuSeconds(proc.pid!)
  await sleep(idleSeconds * 1000)
  const idleCpu = (cpuSeconds(proc.pid!) - cpuBefore) / idleSeconds
  const row: Measured = {
    client: args.client,
    members,
    sources: args.topics.length,
    readyS,
    idleRss: readyRss,
    rss: rssBytes(proc.pid!),
    idleCpu,
    sockets: socketsOf(proc.pid!)
  }
  proc.send({ type: 'close' })
  await new Promise(resolve => proc.once('exit', resolve))
  return row
}

const kafka = await startKafka()
const rows: Row[] = []
try {
  const run = `mm${Date.now().toString(36)}`
  const most = Math.max(...levels.map(l => l.sources))
  const topics = Array.from({ length: most }, (_, i) => `${run}-t${i}`)
  await fill(kafka.brokers, topics)
  console.log(`filled ${most} topics of ${PARTITIONS} partitions with ${recordsPerTopic} records of 256 B each`)
  for (const level of levels) {
    for (const client of clients) {
      const args: ChildArgs = {
        client,
        brokers: kafka.brokers,
        topics: topics.slice(0, level.sources),
        membersPerSource: level.perSource,
        run: `${run}-${level.members}`
      }
      const row = await measure(args, level.sources * recordsPerTopic, level.members)
      rows.push(row)
      if ('failed' in row) {
        console.log(`${client}: ${row.members} members in ${row.sources} groups: ${row.failed}`)
        continue
      }
      console.log(
        `${client}: ${row.members} members in ${row.sources} groups ready in ${row.readyS.toFixed(1)} s, ` +
          `RSS ${(row.rss / 2 ** 20).toFixed(0)} MiB (${(row.idleRss / 2 ** 20).toFixed(0)} before), ` +
          `idle CPU ${row.idleCpu.toFixed(3)} cores, ${row.sockets} sockets`
      )
    }
  }
} finally {
  await kafka.stop()
}

const kib = (bytes: number) => (bytes / 1024).toFixed(0)
console.log(`\n${machine()}, ${recordsPerTopic} records per topic, ${PARTITIONS} partitions per topic\n`)
console.log(
  '| client | members (groups × per group) | every member assigned, every record handled | RSS above the empty process | per member | idle CPU (cores) | per member (ms/s) | sockets |'
)
console.log('|---|---:|---:|---:|---:|---:|---:|---:|')
for (const r of rows) {
  if ('failed' in r) {
    console.log(
      `| ${r.client} | ${r.members} (${r.sources} × ${r.members / r.sources}) | never: ${r.failed} | | | | | |`
    )
    continue
  }
  const above = r.rss - r.idleRss
  console.log(
    `| ${r.client} | ${r.members} (${r.sources} × ${r.members / r.sources}) | ${r.readyS.toFixed(1)} s | ${(above / 2 ** 20).toFixed(1)} MiB | ${kib(above / r.members)} KiB | ${r.idleCpu.toFixed(3)} | ${((r.idleCpu * 1000) / r.members).toFixed(2)} | ${r.sockets} |`
  )
}
