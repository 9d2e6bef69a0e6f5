// `shoal perf produce` against Kafka's own kafka-producer-perf-test (org.apache.kafka.tools.ProducerPerformance
// from the kafka-tools jar the embedded Kafka runs on), on the same broker in one run, turn about, each on a
// topic of its own with the same partitions, both as separate processes with the same flags. Two scenarios:
// flat out (--throughput -1, records/sec and latency under load) and paced (--throughput R, latency at a rate
// both reach).
//
//   npm run bench:perf-produce [-- --records 1000000 --record-size 100 --paced-records 100000 --paced-rate 10000 --rounds 2]
//
// KAFKA_BOOTSTRAP_SERVERS uses that Kafka instead of starting the embedded one.
import { execFile } from 'node:child_process'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { ensureTopics } from '../src/kafka/index.ts'
import { KAFKA_VERSION, startEmbeddedKafka } from '../src/kafka/embedded/index.ts'
import { checkJava, kafkaLibsDir } from '../src/kafka/embedded/index.ts'
import { parseTotal } from '../src/perf/index.ts'
import type { ParsedTotal } from '../src/perf/index.ts'

const run = promisify(execFile)
const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    'record-size': { type: 'string', default: '100' },
    'paced-records': { type: 'string', default: '100000' },
    'paced-rate': { type: 'string', default: '10000' },
    partitions: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '2' }
  }
})
const records = Number(values.records)
const recordSize = Number(values['record-size'])
const pacedRecords = Number(values['paced-records'])
const pacedRate = Number(values['paced-rate'])
const partitions = Number(values.partitions)
const rounds = Number(values.rounds)
const shoalBin = fileURLToPath(new URL('../bin/shoal.js', import.meta.url))

type Tool = 'kafka' | 'shoal'

async function produce(tool: Tool, brokers: string, topic: string, n: number, rate: number): Promise<ParsedTotal> {
  const common = ['--topic', topic, '--num-records', String(n), '--record-size', String(recordSize)]
  const throughput = ['--throughput', String(rate)]
  const { stdout } =
    tool === 'kafka'
      ? await run(
          await checkJava(),
          [
            '-Xmx512m',
            '-cp',
            join(kafkaLibsDir(), '*'),
            'org.apache.kafka.tools.ProducerPerformance',
            ...common,
            ...throughput,
            '--command-property',
            `bootstrap.servers=${brokers}`,
            'acks=all'
          ],
          { maxBuffer: 64 * 1024 * 1024, timeout: 600_000 }
        )
      : await run(
          process.execPath,
          [
            shoalBin,
            'perf',
            'produce',
            ...common,
            `--throughput=${rate}`,
            '--acks',
            'all',
            '--bootstrap-server',
            brokers
          ],
          { maxBuffer: 64 * 1024 * 1024, timeout: 600_000 }
        )
  const total = parseTotal(stdout)
  if (!total) throw new Error(`${tool}: no final line in its output:\n${stdout}`)
  return total
}

function row(label: string, r: ParsedTotal): string {
  return `| ${label} | ${r.recordsPerSec.toFixed(0)} | ${r.mbPerSec.toFixed(2)} | ${r.avgLatencyMs.toFixed(2)} | ${r.maxLatencyMs.toFixed(0)} | ${r.p50} | ${r.p95} | ${r.p99} | ${r.p999} |`
}

const given = process.env['KAFKA_BOOTSTRAP_SERVERS']
const kafka = given ? undefined : await startEmbeddedKafka({ port: 0 })
const brokers = given ?? kafka!.bootstrapBrokers.join(',')
try {
  console.log(
    `# shoal perf produce vs Kafka ${KAFKA_VERSION} ProducerPerformance — nproc ${cpus().length}, Node ${process.version}, ` +
      `${records} × ${recordSize} B flat out and ${pacedRecords} at ${pacedRate}/s, acks=all, ${partitions} partitions, ${rounds} round(s)`
  )
  const results: Record<string, Record<Tool, ParsedTotal[]>> = {
    flat: { kafka: [], shoal: [] },
    paced: { kafka: [], shoal: [] }
  }
  for (let round = 0; round < rounds; round++) {
    // Turn about, so neither tool always runs on the warmer broker.
    const order: Tool[] = round % 2 === 0 ? ['kafka', 'shoal'] : ['shoal', 'kafka']
    for (const [scenario, n, rate] of [
      ['flat', records, -1],
      ['paced', pacedRecords, pacedRate]
    ] as const) {
      for (const tool of order) {
        const topic = `bench-perf-${tool}-${scenario}-${round}-${Date.now()}`
        await ensureTopics({ brokers: brokers.split(','), clientId: 'bench' }, [
          { name: topic, partitions, configs: {} }
        ])
        const result = await produce(tool, brokers, topic, n, rate)
        results[scenario]![tool].push(result)
        console.log(row(`${scenario} round ${round + 1} ${tool}`, result))
      }
    }
  }
  console.log('')
  console.log('| run | records/sec | MB/sec | avg ms | max ms | p50 | p95 | p99 | p99.9 |')
  console.log('|---|---|---|---|---|---|---|---|---|')
  for (const scenario of ['flat', 'paced'] as const) {
    for (const tool of ['kafka', 'shoal'] as const) {
      // The best round of each: the one least disturbed by the rest of the machine.
      const best = results[scenario]![tool].reduce((a, b) => (b.recordsPerSec > a.recordsPerSec ? b : a))
      console.log(row(`${scenario} ${tool === 'kafka' ? 'Kafka ProducerPerformance' : 'shoal perf produce'}`, best))
    }
    const kafkaBest = Math.max(...results[scenario]!.kafka.map(r => r.recordsPerSec))
    const shoalBest = Math.max(...results[scenario]!.shoal.map(r => r.recordsPerSec))
    const kafkaP99 = Math.min(...results[scenario]!.kafka.map(r => r.p99))
    const shoalP99 = Math.min(...results[scenario]!.shoal.map(r => r.p99))
    console.log(
      `${scenario}: shoal/kafka records/sec ${(shoalBest / kafkaBest).toFixed(2)}×, p99 latency ${shoalP99} ms vs ${kafkaP99} ms`
    )
  }
} finally {
  await kafka?.stop()
}
