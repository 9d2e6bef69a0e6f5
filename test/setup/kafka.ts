// Global set-up of `npm test` (node --test --test-global-setup): one embedded Kafka broker for the whole run,
// shared by every test file through KAFKA_BOOTSTRAP_SERVERS (test files run in child processes that inherit
// this process's environment). A KAFKA_BOOTSTRAP_SERVERS set beforehand names a Kafka to use instead.
import { isShoalError } from '../../src/errors/index.ts'
import { startEmbeddedKafka } from '../../src/kafka/embedded/index.ts'
import type { EmbeddedKafka } from '../../src/kafka/embedded/index.ts'

let kafka: EmbeddedKafka | undefined

export async function globalSetup(): Promise<void> {
  const given = process.env.KAFKA_BOOTSTRAP_SERVERS
  if (given) {
    process.stderr.write(`# tests use the Kafka at KAFKA_BOOTSTRAP_SERVERS=${given}\n`)
    return
  }
  const started = Date.now()
  try {
    kafka = await startEmbeddedKafka({ brokers: 1, port: 0, onProgress: line => process.stderr.write(`# ${line}\n`) })
  } catch (error) {
    // A missing Java or an unreachable Maven Central is one clear line, not the test runner's stack trace.
    if (!isShoalError(error)) throw error
    process.stderr.write(`shoal: the tests' Kafka did not start: ${error.message}\n`)
    process.exit(1)
  }
  process.env.KAFKA_BOOTSTRAP_SERVERS = kafka.bootstrap
  process.env.SHOAL_TEST_KAFKA_LOG = kafka.brokers[0]?.logFile ?? ''
  process.stderr.write(
    `# Kafka ${kafka.version} ready on ${kafka.bootstrap} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`
  )
}

export async function globalTeardown(): Promise<void> {
  await kafka?.stop()
  kafka = undefined
}
