// Pure builders of the files one embedded broker reads: server.properties and its log4j2 configuration.
// Every setting is explained in docs/kafka.md; keep the two in step.

/** Where one broker of the embedded cluster listens and keeps its data. */
export interface BrokerSpec {
  readonly nodeId: number
  /** The Kafka (client and inter-broker) listener, on 127.0.0.1. */
  readonly port: number
  /** The KRaft controller listener, on 127.0.0.1. */
  readonly controllerPort: number
  /** The broker's log.dirs (the metadata log lives there too). */
  readonly logDir: string
  /**
   * A second client listener on 127.0.0.1:port that advertises another address, so every client that
   * bootstraps from it reaches the brokers through whatever listens there (a proxy a fault drill can cut).
   */
  readonly extraListener?: { readonly name: string; readonly port: number; readonly advertised: string }
  /** A client listener with SASL_SSL (SCRAM-SHA-512 over TLS) on 127.0.0.1, for tests of authenticated sources. */
  readonly saslSsl?: {
    readonly port: number
    /** PEM file holding the broker's private key (unencrypted PKCS#8) and its certificate chain. */
    readonly keystoreFile: string
    /** A listener with TLS only, requiring a client certificate signed by the CA in `truststoreFile` (PEM). */
    readonly mutualTls?: { readonly port: number; readonly truststoreFile: string }
  }
}

export const LOOPBACK = '127.0.0.1'

/**
 * A replicated embedded cluster's failover settings, judged as the dispatchers' heartbeats need (broker-settings.ts):
 * a dead broker is fenced 1.8 s after its last heartbeat, a dead follower leaves the ISR within 2.25 s (1.5 times the
 * lag setting), and a lost active KRaft controller is replaced within 2 s (the followers' fetch timeout, then an
 * election timeout of one to two times its setting). Each alone is below the 2.4 s a dispatcher with a 6 s liveness
 * timeout leaves a failover (it fences 3 s after its newest acknowledged heartbeat was sent, up to 0.6 s before the
 * failover began). A node that was both the active controller and the heartbeats' leader holds them for the quorum's
 * failover plus a session timeout (the new controller waits one before it fences a dead broker): 3.8 s, below the
 * default 10 s liveness timeout's 4 s, not the lab's 2.4 s. Kafka's quorum defaults (2 s and 1 s) left a zone cut that
 * took the active controller without one for 3.4 s.
 */
export const EMBEDDED_SESSION_MS = 1_800
export const EMBEDDED_LAG_MS = 1_500
export const EMBEDDED_QUORUM_FETCH_MS = 1_000
export const EMBEDDED_ELECTION_MS = 500

/** `node.id@host:port` of every controller: each broker of the cluster is also a controller voter. */
export function quorumVoters(brokers: readonly BrokerSpec[]): string {
  return brokers.map(b => `${b.nodeId}@${LOOPBACK}:${b.controllerPort}`).join(',')
}

/** The settings of one broker in a cluster of `cluster.length` combined broker+controller nodes. */
export function brokerSettings(broker: BrokerSpec, cluster: readonly BrokerSpec[]): ReadonlyMap<string, string> {
  const replicated = cluster.length >= 3
  const replicas = replicated ? '3' : '1'
  const minIsr = replicated ? '2' : '1'
  const extra = broker.extraListener
  const sasl = broker.saslSsl
  const mtls = sasl?.mutualTls
  const secured =
    (sasl === undefined ? '' : `,SASL_SSL://${LOOPBACK}:${sasl.port}`) +
    (mtls === undefined ? '' : `,SSL://${LOOPBACK}:${mtls.port}`)
  const settings: [string, string][] = [
    // KRaft combined mode: each node is a broker and a controller voter; static voters need no dynamic quorum.
    ['process.roles', 'broker,controller'],
    ['node.id', String(broker.nodeId)],
    ['controller.quorum.voters', quorumVoters(cluster)],
    ['controller.listener.names', 'CONTROLLER'],
    ['inter.broker.listener.name', 'PLAINTEXT'],
    [
      'listener.security.protocol.map',
      `CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT${extra ? `,${extra.name}:PLAINTEXT` : ''}` +
        (sasl === undefined ? '' : ',SASL_SSL:SASL_SSL') +
        (mtls === undefined ? '' : ',SSL:SSL')
    ],
    // Loopback only: a development broker is never reachable from the network.
    [
      'listeners',
      `PLAINTEXT://${LOOPBACK}:${broker.port},CONTROLLER://${LOOPBACK}:${broker.controllerPort}` +
        (extra ? `,${extra.name}://${LOOPBACK}:${extra.port}` : '') +
        secured
    ],
    [
      'advertised.listeners',
      `PLAINTEXT://${LOOPBACK}:${broker.port}${extra ? `,${extra.name}://${extra.advertised}` : ''}${secured}`
    ],
    ['log.dirs', broker.logDir],

    // Shoal creates every topic it uses explicitly, with its own partition count and config.
    ['auto.create.topics.enable', 'false'],
    ['num.partitions', '1'],
    ['default.replication.factor', replicas],
    ['min.insync.replicas', minIsr],
    ['offsets.topic.replication.factor', replicas],
    ['transaction.state.log.replication.factor', replicas],
    ['transaction.state.log.min.isr', minIsr],
    ['share.coordinator.state.topic.replication.factor', replicas],
    ['share.coordinator.state.topic.min.isr', minIsr],
    // Fewer internal partitions than the default 50: the first group or transaction creates them faster.
    ['offsets.topic.num.partitions', '10'],
    ['transaction.state.log.num.partitions', '10'],

    // Consumer groups: no 3 s wait for more members before the first assignment, and session timeouts of a
    // few seconds (Shoal uses 3-6 s) are accepted.
    ['group.initial.rebalance.delay.ms', '0'],
    ['group.min.session.timeout.ms', '1000'],

    // Transactions: abort a timed-out transaction within about a second of its timeout, not ten.
    ['transaction.abort.timed.out.transaction.cleanup.interval.ms', '1000'],
    ['transaction.max.timeout.ms', '900000'],

    // Small segments and short retention: tests write little and often; compacted topics are not affected.
    ['log.segment.bytes', String(16 * 1024 * 1024)],
    ['log.retention.ms', String(60 * 60 * 1000)],
    ['log.retention.check.interval.ms', String(60 * 1000)],
    ['log.cleaner.dedupe.buffer.size', String(16 * 1024 * 1024)],

    // Threads sized for a laptop or a 2-core CI machine, not a production broker.
    ['num.network.threads', '2'],
    ['num.io.threads', '4'],
    ['background.threads', '4'],
    ['num.replica.fetchers', '1'],
    ['num.recovery.threads.per.data.dir', '1'],
    ['log.cleaner.threads', '1']
  ]
  if (sasl !== undefined) {
    // SCRAM users are written into the metadata log at format time (`--add-scram`); the broker's key and chain
    // come from one PEM file, no Java keystore needed.
    settings.push(
      ['sasl.enabled.mechanisms', 'SCRAM-SHA-512'],
      [
        'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config',
        'org.apache.kafka.common.security.scram.ScramLoginModule required;'
      ],
      ['listener.name.sasl_ssl.ssl.keystore.type', 'PEM'],
      ['listener.name.sasl_ssl.ssl.keystore.location', sasl.keystoreFile],
      ['listener.name.sasl_ssl.ssl.client.auth', 'none']
    )
  }
  if (mtls !== undefined && sasl !== undefined) {
    // Mutual TLS: the same broker identity, and only clients whose certificate the given CA signed.
    settings.push(
      ['listener.name.ssl.ssl.keystore.type', 'PEM'],
      ['listener.name.ssl.ssl.keystore.location', sasl.keystoreFile],
      ['listener.name.ssl.ssl.truststore.type', 'PEM'],
      ['listener.name.ssl.ssl.truststore.location', mtls.truststoreFile],
      ['listener.name.ssl.ssl.client.auth', 'required']
    )
  }
  if (replicated) {
    // Fast failover: a killed broker is fenced, and drops out of ISRs, within a few seconds.
    settings.push(
      ['broker.heartbeat.interval.ms', '500'],
      ['broker.session.timeout.ms', String(EMBEDDED_SESSION_MS)],
      ['replica.lag.time.max.ms', String(EMBEDDED_LAG_MS)],
      ['controller.quorum.fetch.timeout.ms', String(EMBEDDED_QUORUM_FETCH_MS)],
      ['controller.quorum.election.timeout.ms', String(EMBEDDED_ELECTION_MS)],
      ['controller.quorum.election.backoff.max.ms', String(EMBEDDED_ELECTION_MS)]
    )
  }
  return new Map(settings)
}

/** The server.properties text of one broker. */
export function serverProperties(broker: BrokerSpec, cluster: readonly BrokerSpec[]): string {
  const lines = ['# Written by Shoal for its embedded Kafka; see docs/kafka.md.']
  for (const [key, value] of brokerSettings(broker, cluster)) lines.push(`${key}=${escapeProperty(value)}`)
  return lines.join('\n') + '\n'
}

/** Java properties files treat backslashes (Windows paths) as escapes. */
function escapeProperty(value: string): string {
  return value.replaceAll('\\', '\\\\')
}

/**
 * log4j2 configuration for one broker: everything at INFO into a size-capped file, nothing on the console.
 * Kafka 4 logs through SLF4J to log4j2 and reads this file from -Dlog4j2.configurationFile.
 */
export function log4j2Config(logFile: string): string {
  const file = escapeXml(logFile)
  return `<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by Shoal for its embedded Kafka; see docs/kafka.md. -->
<Configuration status="warn" shutdownHook="disable">
  <Appenders>
    <RollingFile name="file" fileName="${file}" filePattern="${file}.%i">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
      <Policies><SizeBasedTriggeringPolicy size="20 MB"/></Policies>
      <DefaultRolloverStrategy max="2"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="file"/></Root>
    <Logger name="kafka.request.logger" level="warn"/>
  </Loggers>
</Configuration>
`
}

function escapeXml(value: string): string {
  return value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;')
}
