import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { parseTotal } from '../../src/perf/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { shoalBin } from '../helpers/processes.ts'

const run = promisify(execFile)

/** Runs `shoal perf …` as a user would, with stdout a pipe (so plain lines, no bar). */
async function perf(args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, [shoalBin, 'perf', ...args], {
    env: { ...process.env, KAFKA_BOOTSTRAP_SERVERS: brokers().join(',') },
    timeout: 120_000
  })
}

test('perf produce prints Kafka’s final line, and perf consume reads back every record it sent', async () => {
  const topic = uniqueName('perf-cli')
  const produced = await perf([
    'produce',
    '--topic',
    topic,
    '--num-records',
    '3000',
    '--record-size',
    '64',
    '--throughput',
    '-1',
    '--acks',
    'all'
  ])
  assert.match(produced.stderr, new RegExp(`created topic ${topic}`))
  assert.ok(
    !produced.stdout.includes('\r') && !produced.stdout.includes('\u001b'),
    'no progress bar when stdout is not a terminal'
  )
  const total = parseTotal(produced.stdout)
  assert.ok(total, `no final line in:\n${produced.stdout}`)
  assert.equal(total.records, 3000)
  assert.ok(total.recordsPerSec > 0)
  assert.ok(total.p50 <= total.p95 && total.p95 <= total.p99 && total.p99 <= total.p999)

  const consumed = await perf(['consume', '--topic', topic, '--num-records', '3000', '--timeout', '20000'])
  const [header, line] = consumed.stdout.trim().split('\n')
  assert.equal(header?.split(', ')[0], 'start.time')
  const columns = line!.split(', ')
  assert.equal(columns.length, 10)
  assert.equal(columns[4], '3000', 'records consumed')
  assert.equal(Number(columns[2]), Number(((3000 * 64) / 1024 / 1024).toFixed(4)), 'MB consumed')
})

test('perf consume stops at its timeout when the topic holds fewer records, and says so', async () => {
  const topic = uniqueName('perf-short')
  await perf(['produce', '--topic', topic, '--num-records', '10', '--record-size', '10', '--throughput', '-1'])
  // The timeout counts from the group join: long enough for the first fetch on a busy machine to bring the 10.
  const consumed = await perf(['consume', '--topic', topic, '--num-records', '50', '--timeout', '5000'])
  assert.match(consumed.stderr, /WARNING: Exiting before consuming the expected number of records/)
  assert.equal(consumed.stdout.trim().split('\n')[1]?.split(', ')[4], '10')
})

test('perf e2e delivers every record through a KafkaSource and reports end-to-end percentiles', async () => {
  const { stdout } = await perf(['e2e', '--num-records', '400', '--throughput', '400', '--consumers', '2'])
  const produce = parseTotal(stdout)
  assert.equal(produce?.records, 400)
  const e2e =
    /end-to-end: (\d+) events delivered, [\d.]+ events\/sec, [\d.]+ ms avg latency, [\d.]+ ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th; (\d+) duplicates\./.exec(
      stdout
    )
  assert.ok(e2e, stdout)
  assert.equal(Number(e2e[1]), 400)
  const [p50, p95, p99, p999] = e2e.slice(2, 6).map(Number)
  assert.ok(p50! <= p95! && p95! <= p99! && p99! <= p999!)
})
