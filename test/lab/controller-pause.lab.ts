// Drill: the leader controller (the owner of bucket 0, which runs the scheduler) paused with SIGSTOP for longer
// than the controllers' group session timeout, then resumed: a zombie that comes back believing it leads. Writes
// are made through the API the whole time — through the survivors while it is paused, and a few straight to the
// paused one, which answers them only after it is resumed. Another replica must lead and schedule (a source
// created during the pause is placed); the zombie's appends are fenced (its scheduler term and bucket writers
// are refused by Kafka once a newer owner has opened their transactional ids); no write acknowledged to a client
// is lost; records keep flowing to the sinks and no second of a PingSource is missing.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { replicas } from '../helpers/controllers.ts'
import { http } from '../helpers/http.ts'
import { eventually } from '../helpers/wait.ts'
import { PS, createEverySecondSources, everySecondManifest, readyTimes } from '../helpers/ticks.ts'
import {
  IdProducer,
  PINGS,
  assertPings,
  createSource,
  createSourceDuringFailover,
  reportEach,
  reportPings,
  settle,
  sleep,
  waitReady
} from '../faults/harness.ts'
import { pause, resume } from './faults.ts'
import { Stream, leaderOf, sampleSum, seconds, startDrill, startPool, timesNote } from './drill.ts'
import type { Pool } from './drill.ts'
import type { LabController } from './shoal.ts'

const PARTITIONS = 6
const SOURCES = ['unordered', 'ordered'] as const
/** Longer than the controllers' group session timeout (6 s) and the liveness timeout (6 s). */
const PAUSE_MS = 15_000
const PASSES = 'shoal_scheduler_pass_duration_seconds_count'
const ZOMBIE_WRITES = 3

/** A PingSource that never fires during the drill: a write to the store, placed like any source. */
const marker = (name: string, sink: string): string =>
  everySecondManifest(name, sink).replace('"* * * * * *"', '"0 0 1 1 *"')

/** One write through the API: the name, and the uid and resourceVersion the 201 answered (acknowledged). */
interface Acked {
  readonly name: string
  readonly via: string
  readonly uid: string
  readonly resourceVersion: string
}

describe('drill: the leader controller paused past the session timeout, then resumed', () => {
  it('is replaced, its appends are fenced, and no acknowledged write or record is lost', async () => {
    const { started, prefix, topic, sink, pingSink } = await startDrill('lab-pause', PARTITIONS)
    const producer = new IdProducer('controller-pause', topic, PARTITIONS)
    let pool: Pool | undefined
    let stream: Stream | undefined
    let victim: LabController | undefined
    const acked: Acked[] = []
    let writing = true
    let writer: Promise<void> | undefined
    try {
      pool = await startPool(prefix)
      const first = pool.controllers[0]!.url
      for (const ordering of SOURCES) {
        await createSource(first, { name: ordering, topic, sink: sink.url(ordering), consumers: 2, ordering })
      }
      await createEverySecondSources(first, PINGS, pingSink)
      await waitReady(first, SOURCES)
      const pingsReady = await readyTimes(first, PINGS)
      const leader = await leaderOf(first)
      assert.ok(leader, 'a leader')
      victim = pool.controllers.find(c => c.url === leader.url)
      assert.ok(victim, `the leader ${leader.url} is one of the drill's controllers`)
      const paused = victim
      const survivors = pool.controllers.filter(c => c !== paused)
      const passesBefore = new Map<string, number>()
      for (const c of survivors) passesBefore.set(c.url, await sampleSum(`${c.url}/metrics`, PASSES))

      // A write every 200 ms through the survivors, each tried again on a 5xx until acknowledged (a 409 after a
      // failed try means that try did create it: read back, it is acknowledged then).
      const markerSink = pingSink.url('markers')
      writer = (async () => {
        for (let n = 0; writing; n++) {
          const via = survivors[n % survivors.length]!.url
          const name = `w-${n}`
          await eventually(
            async () => {
              const answer = await http('POST', `${via}${PS}`, marker(name, markerSink))
              if (answer.status === 201 || answer.status === 409) {
                const stored = answer.status === 201 ? answer.body : (await http('GET', `${via}${PS}/${name}`)).body
                acked.push({ name, via, uid: stored.metadata.uid, resourceVersion: stored.metadata.resourceVersion })
                return true
              }
              if (answer.status < 500)
                throw new Error(`creating ${name}: ${answer.status} ${JSON.stringify(answer.body)}`)
              return undefined
            },
            60_000,
            `${name} created`
          )
          await sleep(200)
        }
      })()

      stream = new Stream(producer)
      await eventually(async () => (SOURCES.every(s => sink.ids(s).size >= 300) ? true : undefined), 120_000, 'flowing')
      const pausedAt = pause(paused.pid)
      // Straight to the paused replica: its kernel accepts the connections, it answers once it is resumed.
      const zombieWrites = Array.from({ length: ZOMBIE_WRITES }, (_, i) =>
        http('POST', `${paused.url}${PS}`, marker(`z-${i}`, markerSink)).then(
          answer => ({ name: `z-${i}`, status: answer.status, body: answer.body }),
          (error: unknown) => ({ name: `z-${i}`, status: 0, body: String(error) })
        )
      )
      // A source created during the pause must be placed: by the new leader.
      const creating = createSourceDuringFailover(survivors[0]!.url, {
        name: 'after',
        topic,
        sink: sink.url('after'),
        consumers: 2
      })
      const next = await eventually(
        async () => {
          const found = (await replicas(survivors[0]!.url)).find(r => r.leader)
          return found && found.url !== paused.url ? found : undefined
        },
        60_000,
        'a new leader among the survivors'
      )
      const leaderAt = Date.now()
      const newLeader = survivors.find(c => c.url === next.url)!
      const firstPassAt = await eventually(
        async () =>
          (await sampleSum(`${newLeader.url}/metrics`, PASSES)) > passesBefore.get(newLeader.url)!
            ? Date.now()
            : undefined,
        60_000,
        'the new leader’s first scheduling pass'
      )
      await creating
      await waitReady(newLeader.url, ['after'], 60_000)
      const afterReadyAt = Date.now()
      await sleep(Math.max(0, pausedAt + PAUSE_MS - Date.now()))
      const resumedAt = resume(paused.pid)
      const zombie = await Promise.all(zombieWrites)
      for (const z of zombie) {
        if (z.status === 201) {
          acked.push({
            name: z.name,
            via: paused.url,
            uid: z.body.metadata.uid,
            resourceVersion: z.body.metadata.resourceVersion
          })
        }
      }
      // The zombie back in the group — as a follower, or as the leader again if the rebalance after it woke gave it
      // bucket 0: either way the pool must schedule. A source created now must be placed.
      await eventually(
        async () => ((await replicas(newLeader.url)).length === 3 ? true : undefined),
        60_000,
        'the resumed replica back in the group'
      )
      await createSourceDuringFailover(paused.url, { name: 'later', topic, sink: sink.url('later'), consumers: 2 })
      await waitReady(newLeader.url, ['later'], 60_000)
      const schedulingAt = Date.now()
      const leaderAfter = await leaderOf(newLeader.url)
      await sleep(5_000)
      writing = false
      await writer
      await stream.stop()

      const sources = [...SOURCES, 'after', 'later'].map(name => ({ name, sink }))
      await settle('controller-pause', producer.produced, sources)
      const pingsStop = Date.now()
      // Every acknowledged write is there, as acknowledged, whichever replica is asked.
      const missingWrites: string[] = []
      for (const c of pool.controllers) {
        for (const w of acked) {
          const stored = (await http('GET', `${c.url}${PS}/${w.name}`)).body
          if (stored?.metadata?.uid !== w.uid) missingWrites.push(`${w.name}@${c.host.name}`)
        }
      }
      const log = paused.stderr
      const fencedScheduler = (log.match(/scheduler leadership was taken by another replica/g) ?? []).length
      const fencedBuckets = (log.match(/was taken over by another replica/g) ?? []).length
      const times = timesNote({
        'pause→new leader seen': leaderAt - pausedAt,
        'pause→first pass': firstPassAt - pausedAt,
        'pause→new source Ready': afterReadyAt - pausedAt,
        'resume→placing again': schedulingAt - resumedAt,
        took: Date.now() - started
      })
      const notes = {
        paused: `${leader.replicaId} (${seconds(resumedAt - pausedAt)})`,
        newLeader: next.replicaId,
        leaderAfterResume: leaderAfter?.replicaId ?? '?',
        writesAcked: acked.length,
        writesLost: missingWrites.length,
        zombieAnswers: zombie.map(z => z.status).join(' '),
        zombieFenced: `scheduler ${fencedScheduler}, buckets ${fencedBuckets}`,
        times
      }
      const kafka = reportEach('controller-pause', producer.produced, sources, notes)
      const pings = await reportPings(
        'controller-pause',
        pingSink,
        pingsReady,
        pingsStop,
        { times },
        {
          pause: pausedAt,
          resume: resumedAt
        }
      )
      assert.deepEqual(missingWrites, [], 'acknowledged writes not found')
      for (const figures of kafka) {
        assert.equal(figures.produced, producer.produced.size)
        assert.equal(figures.lost, 0, `${figures.drill}: lost ${figures.lostIds.slice(0, 20).join(' ')}`)
      }
      assertPings('controller-pause', pings)
      // Whatever the zombie answered 201 was really written (checked above with the other acknowledged writes); a
      // 503, or a connection it closed on waking (status 0: its keep-alive timer had run out while it was paused),
      // acknowledged nothing.
      for (const z of zombie)
        assert.ok([0, 201, 503].includes(z.status), `${z.name}: ${z.status} ${JSON.stringify(z.body)}`)
    } finally {
      writing = false
      await writer?.catch(() => undefined)
      if (victim) resume(victim.pid)
      await stream?.stop()
      await producer.close()
      await pool?.stop()
      await sink.close()
      await pingSink.close()
    }
  })
})
