import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, it } from 'node:test'
import { ensureTopics } from '../../src/kafka/index.ts'
import { KS, RecordingProducer, countingSink, kafkaSource, sourceAt } from '../autoscale/harness.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { captureOutput, shoalBin } from '../helpers/processes.ts'
import { eventually } from '../helpers/wait.ts'

interface PoolView {
  desired: number
  replicas: number
  reason: string
  message: string
  pending: { insufficientCapacity: { consumer: number } }
  members: Array<{ id: string; draining: boolean }>
}

// `shoal up --dispatchers 1..3` as a real process with real dispatcher processes: a source of 5 consumers on
// dispatchers of 2 slots each makes it start two more; deleting the source makes it drain and stop them again.
describe('shoal up --dispatchers MIN..MAX', () => {
  it('starts dispatchers until nothing is pending, and stops them when the load goes away', async () => {
    const prefix = uniqueName('pool-up')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: 'pool-up' }, [{ name: topic, partitions: 6, configs: {} }])
    const sink = await countingSink()
    const producer = new RecordingProducer()
    const up = spawn(
      process.execPath,
      [
        ...[shoalBin, 'up', '--kafka', brokers().join(','), '--port', '0', '--prefix', prefix, '--no-demo'],
        ...['--dispatchers', '1..3', '--zones', 'a,b,c', '--dispatcher-capacity', '2', '--pool-stabilization', '2s']
      ],
      { env: { ...process.env, SHOAL_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] }
    )
    const output = captureOutput(up)
    const { lines, exited } = output
    try {
      const url = await eventually(
        async () => {
          if (up.exitCode !== null) throw new Error(`shoal up exited with ${up.exitCode}: ${output.stderr}`)
          return lines.map(l => /^\s+API\s+(\S+)/.exec(l)?.[1]).find(u => u !== undefined)
        },
        90_000,
        'shoal up serving its API'
      )
      const pool = async () => {
        const answer = await http('GET', `${url}/shoal/v1/pool`)
        return answer.status === 200 ? (answer.body as PoolView) : undefined
      }
      // The minimum: one dispatcher, alive.
      await eventually(async () => ((await pool())?.members.length === 1 ? true : undefined), 60_000, 'dispatcher-0')

      const created = await http('POST', `${url}${KS}`, kafkaSource('wide', topic, sink.url, { consumers: 5 }))
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const grown = await eventually(
        async () => {
          const view = await pool()
          const source = await sourceAt(url, 'wide')
          return view?.members.length === 3 &&
            view.pending.insufficientCapacity.consumer === 0 &&
            source.status.consumers === 5
            ? view
            : undefined
        },
        90_000,
        'three dispatchers and all 5 consumers placed'
      )
      assert.equal(grown.desired, 3)
      assert.deepEqual(
        grown.members.map(m => m.id),
        ['dispatcher-0', 'dispatcher-1', 'dispatcher-2']
      )
      assert.ok(lines.includes('pool: started dispatcher-1 (zone b)'), lines.join('\n'))
      assert.ok(lines.includes('pool: started dispatcher-2 (zone c)'), lines.join('\n'))
      // Not more than MAX, ever.
      assert.ok(!lines.some(l => l.includes('started dispatcher-3')), lines.join('\n'))

      // The dispatchers it started deliver.
      await eventually(
        async () => {
          const ready = (await sourceAt(url, 'wide')).status.conditions.find(c => c.type === 'Ready')?.status
          return ready === 'True' ? true : undefined
        },
        60_000,
        'the source Ready'
      )
      await producer.produce(topic, 6, 60)
      await eventually(
        async () => ([...producer.produced].every(id => sink.seen.has(id)) ? true : undefined),
        60_000,
        'every record at the sink'
      )

      // The load goes away: the pool drains the highest ordinals and stops them, down to the minimum.
      assert.equal((await http('DELETE', `${url}${KS}/wide`)).status, 200)
      const shrunk = await eventually(
        async () => {
          const view = await pool()
          // Both are stopped at once: each logs once its process exited, after it left the pool's view.
          return view?.members.length === 1 &&
            lines.includes('pool: stopped dispatcher-1') &&
            lines.includes('pool: stopped dispatcher-2')
            ? view
            : undefined
        },
        90_000,
        'the pool back at its minimum'
      )
      assert.equal(shrunk.desired, 1)
      assert.deepEqual(
        shrunk.members.map(m => m.id),
        ['dispatcher-0']
      )
      assert.ok(lines.includes('pool: stopped dispatcher-2'), lines.join('\n'))
    } finally {
      if (up.exitCode === null) up.kill('SIGTERM')
      const timer = setTimeout(() => up.kill('SIGKILL'), 30_000)
      const code = await exited
      clearTimeout(timer)
      await producer.close()
      await sink.close()
      assert.equal(code, 0, `shoal up exited with ${code}: ${output.stderr}`)
    }
  })
})
