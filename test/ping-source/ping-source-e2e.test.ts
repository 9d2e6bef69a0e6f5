import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { IncomingHttpHeaders, Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { LATE_EXTENSION, tickEventId } from '../../src/ping-source/index.ts'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { startDispatcherProcess, startZonedDispatchers } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'

const PS = '/apis/sources.knative.dev/v1/namespaces/default/pingsources'
const LIVENESS = ['--liveness-timeout', '3s']
const LATE_HEADER = `ce-${LATE_EXTENSION}`

interface Received {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
  readonly status: number
}

/** A real HTTP sink on loopback that records every request; `answer` picks each one's status. */
async function startSink(answer: (headers: IncomingHttpHeaders, seen: readonly Received[]) => number = () => 202) {
  const requests: Received[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', chunk => chunks.push(chunk))
    req.on('end', () => {
      const status = answer(req.headers, requests)
      requests.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString(), status })
      res.writeHead(status).end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    /** Delivered (2xx) requests to `path`. */
    delivered: (path: string) => requests.filter(r => r.path === path && r.status < 300),
    close: () => new Promise<void>(resolve => server.close(() => resolve()))
  }
}

function manifest(name: string, spec: string, annotations = ''): string {
  return `apiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata:\n  name: ${name}\n${annotations}spec:\n${spec}`
}

async function create(controller: ControllerProcess, body: string): Promise<{ uid: string }> {
  const created = await http('POST', `${controller.url}${PS}`, body)
  assert.equal(created.status, 201, JSON.stringify(created.body))
  return { uid: created.body.metadata.uid }
}

async function placementOf(controller: ControllerProcess, name: string): Promise<string | undefined> {
  const source = (await http('GET', `${controller.url}${PS}/${name}`)).body
  return source.status?.placements?.[0]?.podName
}

describe('PingSource end to end, one dispatcher', () => {
  let sink: Awaited<ReturnType<typeof startSink>>
  let controller: ControllerProcess
  let dispatcher: DispatcherProcess
  before(async () => {
    // Every tick's first attempt fails with 503: each one is retried, so each id is seen twice.
    sink = await startSink((headers, seen) =>
      headers['ce-source']?.toString().endsWith('/beat') && !seen.some(r => r.headers['ce-id'] === headers['ce-id'])
        ? 503
        : 202
    )
    const prefix = uniqueName('ping')
    controller = await startControllerProcess(prefix)
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10)
  })
  after(async () => {
    await controller?.stop()
    await dispatcher?.stop()
    await sink?.close()
  })

  it('a six-field schedule every 2 s delivers Knative ping events, and a retry carries the same id', async () => {
    const { uid } = await create(
      controller,
      manifest(
        'beat',
        `  schedule: "*/2 * * * * *"\n  contentType: application/json\n  data: '{"hello":"world"}'\n  ceOverrides: {extensions: {team: blue}}\n  sink: {uri: "${sink.url}/beat"}\n`
      )
    )
    const delivered = await eventually(
      async () => {
        const ok = sink.delivered('/beat')
        // The ticks since creation that passed before the schedule was placed come first, late and marked: on a
        // slow machine they may be the first four, so wait for on-time ones too.
        return ok.length >= 4 && ok.filter(r => r.headers[LATE_HEADER] === undefined).length >= 2 ? ok : undefined
      },
      60_000,
      'four ticks delivered, two of them on time'
    )
    const times = new Set<string>()
    for (const event of delivered) {
      const h = event.headers
      assert.equal(h['ce-specversion'], '1.0')
      assert.equal(h['ce-type'], 'dev.knative.sources.ping')
      assert.equal(h['ce-source'], '/apis/v1/namespaces/default/pingsources/beat')
      assert.equal(h['content-type'], 'application/json')
      assert.equal(h['ce-team'], 'blue')
      assert.equal(event.body, '{"hello":"world"}')
      // ce-time is the nominal tick: an even second, to the millisecond.
      const time = String(h['ce-time'])
      assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d[02468]\.000Z$/)
      // The id comes from the source's uid and the tick, so anyone can tell a resend from a new event.
      assert.equal(h['ce-id'], tickEventId(uid, Date.parse(time)))
      times.add(time)
      // The 503 attempt before it carried the same id and the same tick.
      const attempts = sink.requests.filter(r => r.headers['ce-id'] === h['ce-id'])
      assert.deepEqual(
        attempts.map(r => [r.status, r.headers['ce-time']]),
        [
          [503, time],
          [202, time]
        ]
      )
    }
    assert.equal(times.size, delivered.length, 'one delivery per tick')
    assert.ok(
      delivered.filter(r => r.headers[LATE_HEADER] === undefined).length >= 2,
      'ticks after the first few fire on time, unmarked'
    )
  })

  it('a schedule in another time zone fires at the instant its zone names', async () => {
    // A zone whose offset is not the machine's, so the same fields read in the machine's zone (or UTC) would
    // name another instant: Asia/Kolkata is UTC+05:30.
    const machineOffset = new Date().getTimezoneOffset()
    const timezone = machineOffset === -330 ? 'America/St_Johns' : 'Asia/Kolkata'
    const target = new Date(Math.ceil((Date.now() + 25_000) / 1000) * 1000)
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: timezone,
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      hourCycle: 'h23'
    }).formatToParts(target)
    const field = (type: string) => Number(local.find(p => p.type === type)!.value)
    const schedule = `${field('second')} ${field('minute')} ${field('hour')} * * *`
    await create(
      controller,
      manifest('zoned', `  schedule: "${schedule}"\n  timezone: ${timezone}\n  sink: {uri: "${sink.url}/zoned"}\n`)
    )
    const [event] = await eventually(
      async () => {
        const ok = sink.delivered('/zoned')
        return ok.length > 0 ? ok : undefined
      },
      90_000,
      `the ${schedule} ${timezone} tick`
    )
    assert.equal(event!.headers['ce-time'], target.toISOString())
    assert.equal(event!.headers[LATE_HEADER], undefined, 'fired on time, not as a catch-up')
  })
})

/** Every second from the first tick delivered to the last that is not among them. */
function missingSeconds(delivered: readonly Received[]): string[] {
  const times = new Set(delivered.map(r => Date.parse(String(r.headers['ce-time']))))
  const lost: string[] = []
  for (let t = Math.min(...times); t <= Math.max(...times); t += 1000)
    if (!times.has(t)) lost.push(new Date(t).toISOString())
  return lost
}

/**
 * The deliveries to `path` once no second is missing from the first tick to the last: late ticks still on their
 * way are waited for; a lost one never arrives and fails here, naming the seconds.
 */
function everySecondAt(sink: Awaited<ReturnType<typeof startSink>>, path: string): Promise<Received[]> {
  return eventually(
    async () => {
      const now = sink.delivered(path)
      const lost = missingSeconds(now)
      if (lost.length > 0) throw new Error(`seconds missing: ${lost.join(' ')}`)
      return now
    },
    30_000,
    'every second from the first tick to the last at the sink'
  )
}

/** Resolves once `count` ticks nominally after `afterMs` have reached `/tick` on time (not marked late). */
function onTimeAfter(sink: Awaited<ReturnType<typeof startSink>>, afterMs: number, count: number, what: string) {
  return eventually(
    async () => {
      const onTime = sink
        .delivered('/tick')
        .filter(r => r.headers[LATE_HEADER] === undefined && Date.parse(String(r.headers['ce-time'])) > afterMs)
      return onTime.length >= count ? true : undefined
    },
    60_000,
    what
  )
}

/** Each of `times` (ce-time values) reached the sink exactly once. */
function assertSentOnce(delivered: readonly Received[], times: readonly string[], when: string): void {
  for (const time of times) {
    const copies = delivered.filter(r => r.headers['ce-time'] === time).length
    assert.equal(copies, 1, `the tick of ${time}, ${when}, was sent ${copies} times`)
  }
}

/** A controller, two dispatchers in two zones, and a PingSource `tick` firing every second, placed. */
async function tickingOnTwoDispatchers(name: string) {
  const sink = await startSink()
  const prefix = uniqueName(name)
  const controller = await startControllerProcess(prefix, LIVENESS)
  const dispatchers = new Map<string, DispatcherProcess>()
  const stop = async () => {
    await controller.stop()
    await Promise.all([...dispatchers.values()].map(d => d.stop()))
    await sink.close()
  }
  try {
    await startZonedDispatchers(prefix, dispatchers, 2, 10, LIVENESS)
    await create(controller, manifest('tick', `  schedule: "* * * * * *"\n  sink: {uri: "${sink.url}/tick"}\n`))
    const owner = await eventually(() => placementOf(controller, 'tick'), 60_000, 'the schedule placed')
    return { sink, controller, dispatchers, owner, stop, prefix }
  } catch (error) {
    await stop()
    throw error
  }
}

describe('PingSource failover', () => {
  it('SIGKILL of the dispatcher running a schedule: it moves, and the ticks of the gap arrive late and marked', async () => {
    const { sink, controller, dispatchers, owner, stop } = await tickingOnTwoDispatchers('ping-kill')
    try {
      await eventually(async () => (sink.delivered('/tick').length >= 3 ? true : undefined), 60_000, 'ticks flowing')
      const killedAt = Date.now()
      await dispatchers.get(owner)!.stop('SIGKILL')
      dispatchers.delete(owner)
      const survivor = [...dispatchers.keys()][0]!
      await eventually(
        async () => ((await placementOf(controller, 'tick')) === survivor ? true : undefined),
        60_000,
        `the schedule moved to ${survivor}`
      )
      // The new owner fires on time again: an unmarked tick well after the kill.
      const resumedAt = await eventually(
        async () => {
          const onTime = sink
            .delivered('/tick')
            .filter(r => r.headers[LATE_HEADER] === undefined && Date.parse(String(r.headers['ce-time'])) > killedAt)
          return onTime.length >= 2 ? Date.parse(String(onTime[0]!.headers['ce-time'])) : undefined
        },
        60_000,
        'on-time ticks from the new owner'
      )
      // The new owner's late ticks are sent while its on-time ones start: wait until none is still on its way.
      const delivered = await everySecondAt(sink, '/tick')
      const times = new Set(delivered.map(r => Date.parse(String(r.headers['ce-time']))))
      assert.deepEqual(missingSeconds(delivered), [], 'every second from the first tick to the last reached the sink')
      const gap = delivered.filter(r => {
        const t = Date.parse(String(r.headers['ce-time']))
        return t > killedAt && t < resumedAt
      })
      assert.ok(gap.length > 0, 'ticks fell in the gap')
      assert.ok(
        gap.every(r => r.headers[LATE_HEADER] === 'true'),
        'the gap ticks arrived marked late'
      )
      const duplicates = delivered.length - times.size
      console.log(`# ${times.size} ticks, ${gap.length} in the gap fired late, ${duplicates} resent (same id)`)
      console.log(
        `# killed at ${new Date(killedAt).toISOString().slice(17, 23)}: ` +
          delivered
            .map(r => `${String(r.headers['ce-time']).slice(17, 19)}${r.headers[LATE_HEADER] ? 'L' : ''}`)
            .join(' ')
      )
    } finally {
      await stop()
    }
  })
})

describe('PingSource with nowhere to go', () => {
  it('its only dispatcher dies: pending, then a new dispatcher goes on where the dead one stopped, not from creation', async () => {
    const { sink, controller, dispatchers, owner, stop, prefix } = await tickingOnTwoDispatchers('ping-pending')
    try {
      const other = [...dispatchers.keys()].find(id => id !== owner)!
      await dispatchers.get(other)!.stop()
      dispatchers.delete(other)
      await eventually(async () => (sink.delivered('/tick').length >= 8 ? true : undefined), 60_000, 'ticks flowing')
      const first = sink
        .delivered('/tick')
        .map(r => String(r.headers['ce-time']))
        .sort()
        .slice(0, 3)
      await dispatchers.get(owner)!.stop('SIGKILL')
      dispatchers.delete(owner)
      // Dead after the liveness timeout, and no dispatcher left to take the schedule: it waits for capacity.
      await eventually(
        async () => {
          const source = (await http('GET', `${controller.url}${PS}/tick`)).body
          const scheduled = source.status?.conditions?.find((c: { type: string }) => c.type === 'Scheduled')
          return scheduled?.status === 'False' ? true : undefined
        },
        60_000,
        'the schedule pending'
      )
      const revivedAt = Date.now()
      dispatchers.set('dispatcher-7', await startDispatcherProcess(prefix, 'dispatcher-7', 'c', 'c-1', 10, LIVENESS))
      await eventually(
        async () => ((await placementOf(controller, 'tick')) === 'dispatcher-7' ? true : undefined),
        60_000,
        'the schedule placed on the new dispatcher'
      )
      await onTimeAfter(sink, revivedAt, 2, 'on-time ticks from the new dispatcher')
      const delivered = await everySecondAt(sink, '/tick')
      // It went on from the dead one's watermark: the schedule's first ticks were not fired again.
      assertSentOnce(delivered, first, 'from long before the kill')
      const resent = delivered.length - new Set(delivered.map(r => r.headers['ce-id'])).size
      console.log(`# pending, then dispatcher-7: ${delivered.length} deliveries, ${resent} resent (same id)`)
    } finally {
      await stop()
    }
  })
})

describe('PingSource moved between live dispatchers', () => {
  it('a cordon moves the schedule; the new owner goes on from the old one, neither skipping a tick nor refiring its past', async () => {
    const { sink, controller, dispatchers, owner, stop } = await tickingOnTwoDispatchers('ping-move')
    try {
      // Long enough that its first ticks are many heartbeats in the past when it moves.
      await eventually(async () => (sink.delivered('/tick').length >= 8 ? true : undefined), 60_000, 'ticks flowing')
      const first = sink
        .delivered('/tick')
        .map(r => String(r.headers['ce-time']))
        .sort()
        .slice(0, 3)
      const cordonedAt = Date.now()
      const cordon = await http(
        'POST',
        `${controller.url}/apis/shoal.dev/v1alpha1/dispatchers`,
        JSON.stringify({
          apiVersion: 'shoal.dev/v1alpha1',
          kind: 'Dispatcher',
          metadata: { name: owner },
          spec: { unschedulable: true }
        })
      )
      assert.equal(cordon.status, 201, JSON.stringify(cordon.body))
      const other = [...dispatchers.keys()].find(id => id !== owner)!
      await eventually(
        async () => ((await placementOf(controller, 'tick')) === other ? true : undefined),
        60_000,
        `the schedule moved to ${other}`
      )
      await onTimeAfter(sink, cordonedAt, 3, 'on-time ticks after the move')
      const delivered = await everySecondAt(sink, '/tick')
      // The schedule's past before the move was not fired again: its first ticks reached the sink once each.
      assertSentOnce(delivered, first, 'from long before the move')
      const resent = delivered.length - new Set(delivered.map(r => r.headers['ce-id'])).size
      console.log(`# moved ${owner} → ${other}: ${delivered.length} deliveries, ${resent} resent (same id)`)
    } finally {
      await stop()
    }
  })
})

describe('PingSource whose sink its dispatcher cannot resolve', () => {
  let sink: Awaited<ReturnType<typeof startSink>>
  let controller: ControllerProcess
  let dispatcher: DispatcherProcess | undefined
  let prefix: string
  before(async () => {
    sink = await startSink()
    prefix = uniqueName('ping-parked')
    controller = await startControllerProcess(prefix)
  })
  after(async () => {
    await controller?.stop()
    await dispatcher?.stop()
    await sink?.close()
  })

  it('holds the ticks and says why in the status, as a KafkaSource does; its next owner fires them, late', async () => {
    // The dispatcher's service URL template gives no http URL: the Service ref resolves for the controller, not here.
    const template = (base: string) => ({ SHOAL_SERVICE_URL_TEMPLATE: base })
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10, LIVENESS, {
      env: template('ftp://{name}.{namespace}/')
    })
    await create(
      controller,
      manifest('parked', '  schedule: "*/2 * * * * *"\n  sink: {ref: {apiVersion: v1, kind: Service, name: parked}}\n')
    )
    const error = await eventually(
      async () => (await http('GET', `${controller.url}${PS}/parked`)).body.status?.lastDeliveryError,
      60_000,
      'the unresolvable sink in the status'
    )
    assert.match(error.message, /the sink cannot be resolved: spec\.sink: /)
    assert.equal(error.dispatcher, 'dispatcher-0')
    // Every tick up to now fell while the sink did not resolve.
    const parkedThrough = Date.now()
    // The same dispatcher again, now with a template that resolves to the test sink: it goes on from the first
    // tick not handled, so the ticks that waited arrive, marked late.
    await dispatcher.stop()
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10, LIVENESS, {
      env: template(`${sink.url}/{namespace}/{name}`)
    })
    await eventually(
      async () =>
        sink
          .delivered('/default/parked')
          .some(r => r.headers[LATE_HEADER] !== undefined && Date.parse(String(r.headers['ce-time'])) <= parkedThrough)
          ? true
          : undefined,
      60_000,
      'a tick from while the sink did not resolve, delivered late'
    )
  })
})
