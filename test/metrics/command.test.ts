import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { describe, it } from 'node:test'
import { parseDispatcherArgs } from '../../src/dispatcher/index.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { shoalBin } from '../helpers/processes.ts'
import { parseExposition, valueOf } from './prom-text.ts'

const base = ['--kafka', '127.0.0.1:9092', '--id', 'dispatcher-0', '--zone', 'a', '--node', 'n', '--capacity', '3']

describe('shoal dispatcher --metrics-port', () => {
  it('is off unless given; 0 picks a free port; the source label budget is a flag', () => {
    const parsed = (...extra: string[]) => parseDispatcherArgs([...base, ...extra], {})
    assert.equal((parsed() as { metricsPort?: number }).metricsPort, undefined)
    assert.deepEqual(parsed('--metrics-port', '0', '--metrics-source-labels', '5'), {
      ...(parsed() as object),
      metricsPort: 0,
      metricsSourceLabels: 5
    })
    assert.throws(() => parsed('--metrics-port', '65536'), /--metrics-port must be an integer from 0 to 65535/)
    assert.throws(() => parsed('--metrics-port', 'x'), /--metrics-port must be an integer >= 0/)
    assert.throws(() => parsed('--metrics-source-labels=-1'), /--metrics-source-labels must be an integer >= 0/)
  })

  it('serves /metrics and /healthz from a dispatcher process, and says where in its "up" line', async () => {
    const prefix = uniqueName('metrics-cmd')
    const child = spawn(
      process.execPath,
      [
        shoalBin,
        'dispatcher',
        '--kafka',
        brokers().join(','),
        '--prefix',
        prefix,
        '--buckets',
        '4',
        ...base.slice(2)
      ].concat(['--metrics-port', '0']),
      { env: { ...process.env, SHOAL_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] }
    )
    let stderr = ''
    child.stderr.on('data', chunk => (stderr += String(chunk)))
    const exited = once(child, 'exit')
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "up" line in 60 s: ${stderr}`)), 60_000)
        createInterface({ input: child.stdout }).on('line', line => {
          const match = / up, metrics at (\S+)\/metrics$/.exec(line)
          if (match) {
            clearTimeout(timer)
            resolve(match[1]!)
          }
        })
        child.once('exit', code => {
          clearTimeout(timer)
          reject(new Error(`exited with ${code}: ${stderr}`))
        })
      })
      const health = await fetch(`${url}/healthz`)
      assert.equal(health.status, 200)
      assert.deepEqual(await health.json(), { ok: true, status: 'running' })
      const m = parseExposition(await (await fetch(`${url}/metrics`)).text())
      assert.equal(valueOf(m, 'shoal_dispatcher_capacity', { slot: 'consumer', dispatcher: 'dispatcher-0' }), 3)
      assert.equal(valueOf(m, 'shoal_dispatcher_capacity', { slot: 'schedule' }), 1000)
      assert.equal(valueOf(m, 'shoal_dispatcher_used', { slot: 'consumer' }), 0)
      assert.equal(valueOf(m, 'shoal_dispatcher_fenced'), 0)
      assert.ok(m.has('process_resident_memory_bytes'), 'a process serves its process metrics')
    } finally {
      child.kill('SIGTERM')
      const [code] = await exited
      assert.equal(code, 0, stderr)
    }
  })
})
