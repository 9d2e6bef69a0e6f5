// The public face of an embedded Kafka cluster: how it is started and what a running one offers.
import type { ProcessExit } from './broker-process.ts'

/** Options of `startEmbeddedKafka` (cluster.ts). */
export interface StartEmbeddedKafkaOptions {
  /** 1 (default) or 3 combined broker+controller nodes. */
  readonly brokers?: 1 | 3
  /** The first broker's port; the others take the next ones. 0 (default) picks free ports. */
  readonly port?: number
  /** Kept after stop when given; default a fresh temporary folder, removed on stop. */
  readonly dataDir?: string
  /** Receives a line per step (and Maven's progress on the first resolution of the jars). */
  readonly onProgress?: (line: string) => void
  readonly signal?: AbortSignal
  /** How long the brokers get to answer metadata (default 90 s). */
  readonly startTimeoutMs?: number
  /** How long a SIGTERM'd broker gets before SIGKILL (default 20 s). */
  readonly stopTimeoutMs?: number
  /** Called when a broker exits without having been asked to (a crash, an outside kill). */
  readonly onBrokerExit?: (nodeId: number, exit: ProcessExit) => void
  readonly env?: NodeJS.ProcessEnv
  /**
   * A second client listener on every broker (on a free port, named `name`, e.g. `PROXIED`) that advertises
   * `advertised(nodeId)` instead of itself: clients bootstrapping from the advertised addresses reach every
   * broker through whatever listens there, such as a proxy that a fault drill cuts and restores.
   */
  readonly extraListener?: { readonly name: string; readonly advertised: (nodeId: number) => string }
  /**
   * Also listen with SASL_SSL (SCRAM-SHA-512 over TLS) on a port of each broker's own, for tests of
   * authenticated sources: `users` are created at format time; `certificate` (PEM chain) and `privateKey` (PEM,
   * unencrypted PKCS#8) are the brokers' TLS identity, which must name 127.0.0.1.
   */
  readonly saslSsl?: {
    readonly users: ReadonlyArray<{ readonly username: string; readonly password: string }>
    readonly certificate: string
    readonly privateKey: string
    /**
     * Also a TLS listener that requires a client certificate signed by this CA (PEM): mutual TLS without SASL, on a
     * port of each broker's own, with the same broker identity.
     */
    readonly clientCa?: string
  }
}

/** One node of the embedded cluster as it is now. */
export interface EmbeddedBrokerInfo {
  readonly nodeId: number
  /** `127.0.0.1:port`, the broker's Kafka listener. */
  readonly address: string
  readonly port: number
  readonly controllerPort: number
  /** The port of the extra listener, when the cluster was started with one. */
  readonly extraListenerPort: number | undefined
  /** The Java process id while it runs. */
  readonly pid: number | undefined
  readonly running: boolean
  /** The broker's folder: server.properties, log4j2.xml, data/, server.log, stdout.log. */
  readonly dir: string
  readonly logFile: string
}

/** A running embedded Kafka cluster. */
export interface EmbeddedKafka {
  readonly version: string
  /** Comma-separated `host:port` of every broker, for bootstrap. */
  readonly bootstrap: string
  readonly bootstrapBrokers: readonly string[]
  /** Comma-separated `host:port` of every broker's SASL_SSL listener, when started with `saslSsl`. */
  readonly saslSslBootstrap: string | undefined
  /** Comma-separated `host:port` of every broker's mutual-TLS listener, when started with `saslSsl.clientCa`. */
  readonly mutualTlsBootstrap: string | undefined
  readonly clusterId: string
  readonly dataDir: string
  /** A snapshot of every node (pids change when a broker is restarted). */
  readonly brokers: readonly EmbeddedBrokerInfo[]
  /** Kills one broker with SIGKILL (a crash, no controlled shutdown) and waits until it is gone. */
  killBroker(nodeId: number): Promise<void>
  /** Stops one broker with SIGTERM (controlled shutdown), SIGKILL after the stop deadline. */
  stopBroker(nodeId: number): Promise<void>
  /** Starts a stopped or killed broker again, with the same ports and data; resolves once it serves metadata. */
  startBroker(nodeId: number, options?: { readonly signal?: AbortSignal }): Promise<void>
  /** Stops every broker (SIGTERM, then SIGKILL after the deadline) and removes a temporary data folder. */
  stop(): Promise<void>
}
