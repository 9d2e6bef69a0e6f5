// Global set-up of the lab drills (node --test --test-global-setup), run by test/lab/run.ts inside the lab's
// sink host: the three-broker Kafka on the broker hosts, one for every drill (each drill uses a Shoal prefix
// and topics of its own, and leaves every broker in sync when it ends).
//
// Environment for the drills: SHOAL_LAB (the lab's description, set by run.ts), KAFKA_BOOTSTRAP_SERVERS (the
// brokers' addresses) and SHOAL_LAB_BROKERS (node id, host and rack of each broker, JSON).
import { labFromEnv } from './lab.ts'
import { startLabKafka } from './kafka.ts'
import type { LabKafka } from './kafka.ts'

let kafka: LabKafka | undefined

export async function globalSetup(): Promise<void> {
  const started = Date.now()
  const lab = labFromEnv()
  kafka = await startLabKafka(lab, { onProgress: line => process.stderr.write(`# ${line}\n`) })
  process.env.KAFKA_BOOTSTRAP_SERVERS = kafka.bootstrap
  process.env.SHOAL_LAB_BROKERS = JSON.stringify(
    kafka.brokers.map(b => ({ nodeId: b.nodeId, host: b.host.name, rack: b.rack, address: b.address }))
  )
  process.stderr.write(
    `# Kafka ${kafka.version}, 3 brokers on ${kafka.bootstrap} (racks ${kafka.brokers.map(b => b.rack).join(', ')}),` +
      ` ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`
  )
}

export async function globalTeardown(): Promise<void> {
  await kafka?.stop()
  kafka = undefined
}
