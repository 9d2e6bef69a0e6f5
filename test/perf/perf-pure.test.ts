import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  PerfStats,
  formatConsumeTotal,
  formatTotal,
  formatWindow,
  parsePerfArgs,
  parseTotal,
  percentile,
  perfOutput,
  readStamp,
  renderBar,
  stamped,
  throttleDelay
} from '../../src/perf/index.ts'
import { isShoalError } from '../../src/errors/index.ts'

const env = { KAFKA_BOOTSTRAP_SERVERS: '127.0.0.1:9092' }

test('the window line has the shape of kafka-producer-perf-test', () => {
  const line = formatWindow({
    records: 25_000,
    bytes: 2_500_000,
    elapsedMs: 5_000,
    avgLatencyMs: 5.42,
    maxLatencyMs: 149.07
  })
  assert.equal(line, '25000 records sent, 5000.0 records/sec (0.48 MB/sec), 5.4 ms avg latency, 149.1 ms max latency.')
})

test('the final line has the shape of kafka-producer-perf-test and parses back', () => {
  const total = { records: 1_000, bytes: 100_000, elapsedMs: 2_000, avgLatencyMs: 3.456, maxLatencyMs: 40 }
  const line = formatTotal(total, { p50: 2.9, p95: 10.2, p99: 30.7, p999: 39.99 })
  assert.equal(
    line,
    '1000 records sent, 500.000000 records/sec (0.05 MB/sec), 3.46 ms avg latency, 40.00 ms max latency, 2 ms 50th, 10 ms 95th, 30 ms 99th, 39 ms 99.9th.'
  )
  assert.deepEqual(parseTotal(`some warning\n${line}\n`), {
    records: 1000,
    recordsPerSec: 500,
    mbPerSec: 0.05,
    avgLatencyMs: 3.46,
    maxLatencyMs: 40,
    p50: 2,
    p95: 10,
    p99: 30,
    p999: 39
  })
  // Kafka's own line parses the same way.
  const kafka =
    '200000 records sent, 44822.949350 records/sec (4.27 MB/sec), 1161.86 ms avg latency, 2131.00 ms max latency, 1252 ms 50th, 1754 ms 95th, 2071 ms 99th, 2129 ms 99.9th.'
  assert.equal(parseTotal(kafka)?.recordsPerSec, 44822.94935)
})

test('stats keep windows and totals apart, and percentiles come from the recorded latencies', () => {
  const stats = new PerfStats(100, 0)
  for (let i = 1; i <= 100; i++) stats.record(i, 10)
  const window = stats.takeWindow(1_000)
  assert.equal(window.records, 100)
  assert.equal(window.maxLatencyMs, 100)
  stats.record(500, 10)
  assert.deepEqual(stats.takeWindow(2_000), {
    records: 1,
    bytes: 10,
    elapsedMs: 1_000,
    avgLatencyMs: 500,
    maxLatencyMs: 500
  })
  const total = stats.total(2_000)
  assert.equal(total.records, 101)
  assert.equal(total.bytes, 1_010)
  assert.equal(total.maxLatencyMs, 500)
  const p = stats.percentiles()
  assert.equal(p.p50, 51)
  assert.equal(p.p999, 500)
  assert.equal(percentile([], 0.5), 0)
})

test('the throttle spaces records at the target rate, and -1 never waits', () => {
  assert.equal(throttleDelay(100, 0, -1), 0)
  assert.equal(throttleDelay(100, 50, 1_000), 50)
  assert.equal(throttleDelay(100, 200, 1_000), 0)
})

test('the progress bar fills with the fraction done', () => {
  assert.equal(renderBar(5, 10, 10, 'x'), '[#####.....]  50% 5/10 x')
  assert.equal(renderBar(10, 10, 4, ''), '[####] 100% 10/10')
})

test('a stamped payload carries its send time and keeps its size', () => {
  const payload = Buffer.alloc(100, 65)
  const value = stamped(payload, 1234.5678)
  assert.equal(value.length, 100)
  assert.equal(readStamp(value), 1234.568)
  assert.equal(readStamp(payload), undefined)
  assert.equal(payload[0], 65)
})

test('the consumer summary has kafka-consumer-perf-test columns', () => {
  const line = formatConsumeTotal({
    startMs: 0,
    endMs: 2_000,
    records: 1_000,
    bytes: 1024 * 1024,
    rebalanceMs: 500,
    fetchMs: 1_500,
    timedOut: false
  })
  const columns = line.split(', ')
  assert.equal(columns.length, 10)
  assert.deepEqual(columns.slice(2), ['1.0000', '0.5000', '1000', '500.0000', '500', '1500', '0.6667', '666.6667'])
})

test('perf arguments: Kafka spellings, brokers from the environment, -1 throughput', () => {
  const args = parsePerfArgs(
    ['produce', '--topic', 't', '--num-records', '10', '--record-size', '100', '--throughput', '-1', '--acks', '1'],
    env
  )
  assert.deepEqual(args, {
    kind: 'produce',
    brokers: ['127.0.0.1:9092'],
    topic: 't',
    numRecords: 10,
    recordSize: 100,
    throughput: -1,
    acks: 1
  })
  const props = parsePerfArgs(
    [
      'produce',
      '--bootstrap-server',
      'h:1',
      '--topic=t',
      '--num-records=1',
      '--record-size=1',
      '--throughput=5',
      '--producer-props',
      'batch.size=1000 linger.ms=0'
    ],
    {}
  )
  assert.equal(props.kind === 'produce' && props.batchBytes, 1000)
  assert.equal(props.kind === 'produce' && props.lingerMs, 0)
  const e2e = parsePerfArgs(['e2e', '--consumers', '8'], env)
  assert.equal(e2e.kind === 'e2e' && e2e.partitions, 8)
})

test('bad perf arguments are refused naming the argument', () => {
  const cases: Array<[string[], Record<string, string>, RegExp]> = [
    [['produce', '--num-records', '1', '--record-size', '1', '--throughput', '1'], env, /--topic: required/],
    [
      ['produce', '--topic', 't', '--num-records', '0', '--record-size', '1', '--throughput', '1'],
      env,
      /--num-records/
    ],
    [['produce', '--topic', 't', '--num-records', '1', '--record-size', '1', '--throughput', '0'], env, /--throughput/],
    [
      ['produce', '--topic', 't', '--num-records', '1', '--record-size', '1', '--throughput', '1'],
      {},
      /--bootstrap-server/
    ],
    [['consume', '--topic', 't', '--num-records', '1', '--acks', 'x'], env, /--acks/],
    [['consume', '--topic', 't', '--num-records', '1', '--record-size', '3'], env, /--record-size is not a flag/],
    [['e2e', '--consumers', '4', '--partitions', '2'], env, /--partitions/],
    [['produce', '--producer-props', 'compression.type=lz4'], env, /compression.type/],
    [['bogus'], env, /unknown subcommand/]
  ]
  for (const [argv, environment, message] of cases) {
    assert.throws(
      () => parsePerfArgs(argv, environment),
      (error: unknown) => isShoalError(error) && message.test(error.message),
      argv.join(' ')
    )
  }
})

test('on a terminal the bar is drawn in place and cleared before a line; elsewhere only lines are written', () => {
  const written: string[] = []
  const terminal = perfOutput({ write: (t: string) => written.push(t), isTTY: true, columns: 100 })
  terminal.progress(10, 10, 'done')
  terminal.line('final')
  assert.ok(written[0]!.startsWith('\r\u001b[2K[') && written[0]!.endsWith('] 100% 10/10 done'), written[0])
  assert.deepEqual(written.slice(1), ['\r\u001b[2K', 'final\n'])
  const piped: string[] = []
  const plain = perfOutput({ write: (t: string) => piped.push(t) })
  plain.progress(10, 10, 'done')
  plain.line('final')
  plain.finish()
  assert.deepEqual(piped, ['final\n'])
})
