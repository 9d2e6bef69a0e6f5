/**
 * The Kafka clients every Shoal process uses: @platformatic/kafka's, asking for metadata (and API versions, and
 * group coordinators) of a broker that looks alive. The library asks the bootstrap brokers in the order given,
 * and on several paths always the first (an admin's topic list, every first attempt): when that broker
 * black-holes, each such request waited out its request timeout, again and again (docs/kafka.md, "Client
 * timeouts"). Here each request goes to the first bootstrap broker that is not suspect (broker-health.ts), from
 * what every connection of the process saw.
 */
import { tracingChannel } from 'node:diagnostics_channel'
import { Admin, Consumer, Producer, kGetBootstrapConnection, kGetConnection, kOptions } from '@platformatic/kafka'
import type { Broker, Callback, Connection } from '@platformatic/kafka'
import { BrokerHealth } from './broker-health.ts'

/** What this process's connections saw of each broker. */
export const brokerHealth = new BrokerHealth()

interface ApiRequestContext {
  readonly connection?: { readonly host?: string; readonly port?: number }
  readonly apiKey?: number
}

const keyOfConnection = (context: ApiRequestContext): string | undefined =>
  context.connection?.host === undefined ? undefined : `${context.connection.host}:${context.connection.port}`

tracingChannel<unknown, ApiRequestContext & object>('plt:kafka:connections:api').subscribe({
  start: context => {
    const key = keyOfConnection(context)
    if (key !== undefined) brokerHealth.sent(key, context, context.apiKey ?? -1, Date.now())
  },
  end: () => {},
  asyncStart: () => {},
  asyncEnd: context => {
    const key = keyOfConnection(context)
    if (key !== undefined) brokerHealth.answered(key, context, Date.now())
  },
  error: () => {}
})

/** `host:port` or `[v6]:port` → a Broker. */
function brokerOf(address: string | Broker): Broker {
  if (typeof address !== 'string') return address
  const at = address.lastIndexOf(':')
  return { host: address.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(at + 1)) }
}

interface BootstrapClient {
  [kOptions]: { bootstrapBrokers: readonly (string | Broker)[] }
  [kGetConnection](broker: Broker, callback: Callback<Connection>): void
}

/**
 * A connection to the first bootstrap broker that answers a connect, healthy ones first (the list turned by
 * `attempt`, as the library does on retries); `fallback` (the library's own choice, which adds the brokers its
 * metadata discovered) when none does.
 */
function healthyBootstrapConnection(
  client: BootstrapClient,
  callback: Callback<Connection>,
  attempt: number,
  fallback: () => void
): void {
  const listed = client[kOptions].bootstrapBrokers.map(brokerOf)
  const turn = listed.length > 0 ? attempt % listed.length : 0
  const brokers = brokerHealth.order(
    [...listed.slice(turn), ...listed.slice(0, turn)],
    broker => `${broker.host}:${broker.port}`,
    Date.now()
  )
  const next = (index: number): void => {
    const broker = brokers[index]
    if (broker === undefined) {
      fallback()
      return
    }
    client[kGetConnection](broker, (error, connection) => {
      if (error) next(index + 1)
      else callback(null, connection)
    })
  }
  next(0)
}

export class KafkaProducer extends Producer {
  override [kGetBootstrapConnection](callback: Callback<Connection>, attempt = 0): void {
    healthyBootstrapConnection(this, callback, attempt, () => super[kGetBootstrapConnection](callback, attempt))
  }
}

export class KafkaConsumer extends Consumer {
  override [kGetBootstrapConnection](callback: Callback<Connection>, attempt = 0): void {
    healthyBootstrapConnection(this, callback, attempt, () => super[kGetBootstrapConnection](callback, attempt))
  }
}

export class KafkaAdmin extends Admin {
  override [kGetBootstrapConnection](callback: Callback<Connection>, attempt = 0): void {
    healthyBootstrapConnection(this, callback, attempt, () => super[kGetBootstrapConnection](callback, attempt))
  }
}
