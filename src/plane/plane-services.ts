import { Deliverer } from '../delivery/index.ts'
import type { DeliveryObserver, SinkPolicy } from '../delivery/index.ts'
import { DeliveryErrorReporter } from './delivery-error-reporter.ts'
import { ResourcesReader } from './resources-reader.ts'
import type { Log } from '../log/index.ts'
import type { SecretKey } from '../secrets/index.ts'
import { oidcTokenLookup } from './oidc-tokens.ts'

/** What a dispatcher creates once and every source plane on it shares. */
export interface PlaneServices {
  /** The one Deliverer: connection caps per sink origin hold across every kind. */
  readonly deliverer: Deliverer
  /** Each source's last delivery error, for its status (also errors seen outside the Deliverer). */
  readonly errors: DeliveryErrorReporter
  /** The one reader of the resources topic: sources by kind, and Secrets. */
  readonly resources: ResourcesReader
}

export interface PlaneServicesOptions {
  /** The Kafka that holds Shoal's store. */
  readonly brokers: readonly string[]
  readonly prefix?: string
  readonly dispatcherId: string
  /** Requests on the wire per sink origin (DELIVERER_DEFAULTS when absent). */
  readonly maxConnectionsPerOrigin?: number
  /** Refuses sinks at forbidden addresses when connecting (multi-tenant installations; docs/security.md). */
  readonly sinkPolicy?: SinkPolicy
  /** Sees every delivery too (metrics). */
  readonly observer?: DeliveryObserver
  /** Opens the Secrets that hold sinks' OIDC tokens. */
  readonly secretKey?: SecretKey
  readonly log: Log
}

/** The shared services of one dispatcher, with their lifecycle: start before the planes, close after them. */
export class SharedPlaneServices implements PlaneServices {
  readonly deliverer: Deliverer
  readonly errors: DeliveryErrorReporter
  readonly resources: ResourcesReader

  constructor(options: PlaneServicesOptions) {
    this.resources = new ResourcesReader(options)
    this.errors = new DeliveryErrorReporter({
      connection: { brokers: options.brokers, clientId: `shoal-${options.dispatcherId}` },
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      dispatcher: options.dispatcherId,
      ...(options.observer === undefined ? {} : { next: options.observer })
    })
    this.deliverer = new Deliverer({
      ...(options.maxConnectionsPerOrigin === undefined
        ? {}
        : { maxConnectionsPerOrigin: options.maxConnectionsPerOrigin }),
      ...(options.sinkPolicy === undefined ? {} : { sinkPolicy: options.sinkPolicy }),
      oidcTokens: oidcTokenLookup(key => this.resources.secret(key), options.secretKey),
      observer: this.errors
    })
  }

  /** Starts reading the resources topic: subscribe every plane first. */
  async start(): Promise<void> {
    await this.resources.start()
    await this.errors.start()
  }

  async close(): Promise<void> {
    await this.deliverer.close()
    await this.errors.close()
    await this.resources.close()
  }
}
