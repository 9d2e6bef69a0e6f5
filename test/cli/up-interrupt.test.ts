import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { Producer } from '@platformatic/kafka'
import { ensureTopics } from '../../src/kafka/index.ts'
import { KS, countingSink } from '../autoscale/harness.ts'
import { http } from '../helpers/http.ts'
import { captureOutput, shoalBin } from '../helpers/processes.ts'
import { eventually } from '../helpers/wait.ts'

/** Processes whose command line mentions `text` (Linux /proc). */
function processesMentioning(text: string): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) found.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return found
}

describe('shoal up and Ctrl-C', () => {
  it('stops every process it started, in order: nothing left, nothing complaining that Kafka went away', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'shoal-up-interrupt-'))
    // Its own process group, as a terminal's foreground job: Ctrl-C signals the whole group.
    const up = spawn(
      process.execPath,
      [shoalBin, 'up', '--port', '0', '--kafka-port', '0', '--no-demo', '--data-dir', dataDir],
      { env: { ...process.env, SHOAL_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true }
    )
    const output = captureOutput(up)
    const { lines, exited } = output
    try {
      await eventually(
        async () => {
          if (up.exitCode !== null) throw new Error(`shoal up exited with ${up.exitCode}: ${output.stderr}`)
          return lines.includes('Shoal is up.') ? true : undefined
        },
        120_000,
        'shoal up ready'
      )
      assert.ok(processesMentioning(dataDir).length > 0, 'the embedded broker runs from the data directory')
      // A source with members busy on the embedded Kafka, so that stopping has offsets to commit and groups to leave.
      const kafka = lines.map(l => /^\s+Kafka\s+(\S+)/.exec(l)?.[1]).find(k => k !== undefined)!
      const api = lines.map(l => /^\s+API\s+(\S+)/.exec(l)?.[1]).find(u => u !== undefined)!
      await ensureTopics({ brokers: [kafka], clientId: 'up-interrupt' }, [
        { name: 'orders', partitions: 3, configs: {} }
      ])
      const sink = await countingSink()
      try {
        const manifest =
          'apiVersion: sources.knative.dev/v1beta1\nkind: KafkaSource\nmetadata: {name: orders}\n' +
          `spec: {bootstrapServers: [${kafka}], topics: [orders], consumers: 3, initialOffset: earliest, sink: {uri: "${sink.url}"}}\n`
        const created = await http('POST', `${api}${KS}`, manifest)
        assert.equal(created.status, 201, JSON.stringify(created.body))
        const producer = new Producer({ clientId: 'up-interrupt', bootstrapBrokers: [kafka], idempotent: true })
        await producer.send({
          acks: -1,
          messages: Array.from({ length: 30 }, (_, i) => ({ topic: 'orders', value: Buffer.from(`r${i}`) }))
        })
        await producer.close()
        await eventually(async () => (sink.seen.size === 30 ? true : undefined), 90_000, 'the records at the sink')
      } finally {
        await sink.close()
      }
      process.kill(-up.pid!, 'SIGINT')
      assert.equal(await exited, 0, output.stderr)
      assert.deepEqual(processesMentioning(dataDir), [], 'the broker stopped with shoal up')
      const printed = `${lines.join('\n')}\n${output.stderr}`
      assert.doesNotMatch(printed, /failed; retrying|Cannot connect to any broker/, 'Kafka outlived what uses it')
    } finally {
      if (up.exitCode === null && up.signalCode === null) process.kill(-up.pid!, 'SIGKILL')
      for (const pid of processesMentioning(dataDir)) process.kill(pid, 'SIGKILL')
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
