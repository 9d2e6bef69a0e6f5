import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { fencedDrainOf } from '../../src/dispatcher/index.ts'
import { ensureTopics } from '../../src/kafka/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { KS, RecordingProducer, condition, kafkaSource, sourceAt } from '../autoscale/harness.ts'

const LIVENESS_MS = 4_000
/** How long the sink holds each request: past the fenced drain and the pause, short of a graceful close's 10 s. */
const HOLD_MS = 8_000

const pause = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

// A fenced dispatcher cuts its deliveries on the wire a quarter of the liveness timeout after the fence, not after a
// graceful close's ten seconds: its partitions may go to another dispatcher half a liveness timeout after the fence
// (docs/dispatcher.md, "Fencing"), and what it still had on the wire would then overlap the new owner's deliveries.
describe('a fenced dispatcher', () => {
  it('cuts the deliveries it has on the wire before it could be declared dead', { timeout: 180_000 }, async () => {
    assert.ok(fencedDrainOf(LIVENESS_MS) < LIVENESS_MS / 2, 'the drain ends before the controllers may act')
    const prefix = uniqueName('fenced-drain')
    const topic = `${prefix}-topic`
    await ensureTopics({ brokers: brokers(), clientId: prefix }, [{ name: topic, partitions: 1, configs: {} }])
    // A sink that answers each request HOLD_MS after it came, and notes the requests whose connection closed first.
    const held = new Set<string>()
    const cut: string[] = []
    const answered: string[] = []
    const sink = createServer((req, res) => {
      const id = String(req.headers['ce-id'])
      held.add(id)
      req.resume()
      const timer = setTimeout(() => {
        held.delete(id)
        answered.push(id)
        res.writeHead(202).end()
      }, HOLD_MS)
      res.on('close', () => {
        if (res.writableEnded) return
        clearTimeout(timer)
        held.delete(id)
        cut.push(id)
      })
    })
    sink.listen(0, '127.0.0.1')
    await new Promise(resolve => sink.once('listening', resolve))
    const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`
    const producer = new RecordingProducer()
    const liveness = ['--liveness-timeout', `${LIVENESS_MS / 1000}s`]
    let controller: ControllerProcess | undefined
    let dispatcher: DispatcherProcess | undefined
    try {
      controller = await startControllerProcess(prefix, liveness)
      dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-0', 10, liveness, { logLevel: 'info' })
      const manifest = kafkaSource('held', topic, sinkUrl, { consumers: 1, initialOffset: 'earliest' })
      const created = await http('POST', `${controller.url}${KS}`, manifest)
      assert.equal(created.status, 201, JSON.stringify(created.body))
      await eventually(
        async () => (condition(await sourceAt(controller!.url, 'held'), 'Ready') === 'True' ? true : undefined),
        120_000,
        'the source Ready'
      )
      await producer.produce(topic, 1, 5)
      await eventually(async () => (held.size > 0 ? true : undefined), 60_000, 'a delivery held by the sink')
      // Paused past half the liveness timeout, short of all of it: it fences itself when it runs again.
      dispatcher.child.kill('SIGSTOP')
      await pause(LIVENESS_MS / 2 + 500)
      dispatcher.child.kill('SIGCONT')
      await eventually(
        async () => (/: fenced, contract stopped/.test(dispatcher!.stderr) ? true : undefined),
        30_000,
        'the dispatcher fenced'
      )
      await eventually(
        async () => (cut.length > 0 || answered.length > 0 ? true : undefined),
        30_000,
        'a held delivery cut or answered'
      )
      assert.ok(
        cut.length > 0 && answered.length === 0,
        `the held deliveries were answered (${answered.length}), not cut (${cut.length}), after the fence:\n` +
          dispatcher.stderr.slice(-5_000)
      )
    } finally {
      await producer.close()
      await controller?.stop()
      await dispatcher?.stop()
      sink.closeAllConnections()
      sink.close()
    }
  })
})
