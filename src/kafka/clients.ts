/**
 * The Kafka clients every Shoal process uses: @platformatic/kafka's, asking for metadata (and API versions, and
 * group coordinators) of a broker that looks alive. The library asks the bootstrap brokers in the order given,
 * and on several paths always the first (an admin's topic list, every first attempt): when that broker
 * black-holes, each such request waited out its request timeout, again and again (docs/kafka.md, "Client
 * timeouts"). Here each request goes to the first bootstrap broker that is not suspect (broker-health.ts), from
 * what every connection of the process saw.
 */
import { tracingChannel } from 'node:diagnostics_channel'
import {
  Admin,
  Consumer,
  NetworkError,
  Producer,
  kGetApi,
  kGetBootstrapConnection,
  kGetConnection,
  kOptions
} from '@platformatic/kafka'
import type { API, Broker, Callback, Connection } from '@platformatic/kafka'
import { BrokerHealth } from './broker-health.ts'
import { routedProduce } from './produce-routing.ts'

/** What this process's connections saw of each broker. */
export const brokerHealth = new BrokerHealth()

interface ApiRequestContext {
  readonly connection?: { readonly host?: string; readonly port?: number; readonly socket?: { destroy(): void } }
  readonly apiKey?: number
}

/**
 * The connections of the process, by broker, as requests reveal them, so that a broker turning suspect can be dropped
 * by every client at once: each connection to it is closed, and the requests waiting on it fail now — to be retried
 * on a broker that answers (a moved partition's new leader, a group's new coordinator) — instead of at their request
 * timeout, 5–12 s later (docs/kafka.md, "Client timeouts"). Held weakly: a connection that is gone needs no closing.
 */
const connectionsTo = new Map<string, Set<WeakRef<NonNullable<ApiRequestContext['connection']>>>>()
const remembered = new WeakSet<object>()
/** How often the process looks for brokers that turned suspect. */
const SUSPECT_CHECK_MS = 250

function remember(key: string, connection: NonNullable<ApiRequestContext['connection']>): void {
  if (remembered.has(connection)) return
  remembered.add(connection)
  let known = connectionsTo.get(key)
  if (known === undefined) connectionsTo.set(key, (known = new Set()))
  if (known.size > 100) for (const ref of known) if (ref.deref() === undefined) known.delete(ref)
  known.add(new WeakRef(connection))
}

setInterval(() => {
  for (const key of brokerHealth.newlySuspect(Date.now())) {
    for (const ref of connectionsTo.get(key) ?? []) ref.deref()?.socket?.destroy()
    connectionsTo.delete(key)
  }
}, SUSPECT_CHECK_MS).unref()

const keyOfConnection = (context: ApiRequestContext): string | undefined =>
  context.connection?.host === undefined ? undefined : `${context.connection.host}:${context.connection.port}`

tracingChannel<unknown, ApiRequestContext & object>('plt:kafka:connections:api').subscribe({
  start: context => {
    const key = keyOfConnection(context)
    if (key === undefined) return
    brokerHealth.sent(key, context, context.apiKey ?? -1, Date.now())
    remember(key, context.connection!)
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

/** How long after sending a client back to the metadata it may connect to a suspect broker again (bounceSuspect). */
const BOUNCE_EVERY_MS = 2_000
/** Per client: broker → when a connection to it was last refused because it was suspect. */
const bounced = new WeakMap<object, Map<string, number>>()

/**
 * A connection asked of a broker that is suspect — one that answers nothing, most likely lost with its zone — is
 * refused once, as stale metadata: the client asks for metadata again, which by now names the partition's new
 * leader, instead of spending its connect timeout on the lost broker and retrying there until its cached metadata
 * ages out (a producer was acknowledged again 10–12 s after its leader's zone was lost). Then, for BOUNCE_EVERY_MS,
 * it may connect: when the metadata still names that broker, the cluster says it leads, and it is tried. True when
 * refused.
 */
function bounceSuspect(client: object, broker: Broker | undefined, callback: Callback<Connection>): boolean {
  // The library asks for a broker its metadata does not know (a coordinator on a broker not listed yet) as undefined,
  // and answers that itself.
  if (broker?.host === undefined) return false
  const key = `${broker.host}:${broker.port}`
  const now = Date.now()
  if (!brokerHealth.suspect(key, now)) return false
  let times = bounced.get(client)
  if (times === undefined) bounced.set(client, (times = new Map<string, number>()))
  if (now - (times.get(key) ?? -Infinity) < BOUNCE_EVERY_MS) return false
  times.set(key, now)
  callback(
    new NetworkError(`broker ${key} answers nothing: asking for metadata again`, {
      canRetry: true,
      hasStaleMetadata: true,
      broker
    }),
    undefined
  )
  return true
}

export class KafkaProducer extends Producer {
  /** The library's Produce API → the same, routed by leader (see produce-routing.ts). */
  readonly #routed = new WeakMap<object, ReturnType<typeof routedProduce>>();

  override [kGetConnection](broker: Broker, callback: Callback<Connection>): void {
    if (!bounceSuspect(this, broker, callback)) super[kGetConnection](broker, callback)
  }

  /** Produce requests go to each partition's current leader, split when a group's leaders moved apart. */
  override [kGetApi]<Arguments extends unknown[], Answer>(name: string, callback: Callback<API<Arguments, Answer>>) {
    if (name !== 'Produce') {
      super[kGetApi](name, callback)
      return
    }
    super[kGetApi]<Arguments, Answer>(name, (error, api) => {
      if (error || api === undefined) {
        callback(error)
        return
      }
      // Asked for before every Produce request: the wrapper is made once per API version the library picks.
      let routed = this.#routed.get(api)
      if (routed === undefined) {
        const client = {
          metadata: () => this.currentMetadata,
          getConnection: (broker: Broker, done: Callback<Connection>) => this[kGetConnection](broker, done)
        }
        // The library's API types are generic over their arguments; this one is the Produce API.
        this.#routed.set(api, (routed = routedProduce(client, api as never)))
      }
      callback(null, routed as never)
    })
  }

  override [kGetBootstrapConnection](callback: Callback<Connection>, attempt = 0): void {
    healthyBootstrapConnection(this, callback, attempt, () => super[kGetBootstrapConnection](callback, attempt))
  }
}

export class KafkaConsumer extends Consumer {
  override [kGetConnection](broker: Broker, callback: Callback<Connection>): void {
    if (!bounceSuspect(this, broker, callback)) super[kGetConnection](broker, callback)
  }

  override [kGetBootstrapConnection](callback: Callback<Connection>, attempt = 0): void {
    healthyBootstrapConnection(this, callback, attempt, () => super[kGetBootstrapConnection](callback, attempt))
  }
}

export class KafkaAdmin extends Admin {
  override [kGetConnection](broker: Broker, callback: Callback<Connection>): void {
    if (!bounceSuspect(this, broker, callback)) super[kGetConnection](broker, callback)
  }

  override [kGetBootstrapConnection](callback: Callback<Connection>, attempt = 0): void {
    healthyBootstrapConnection(this, callback, attempt, () => super[kGetBootstrapConnection](callback, attempt))
  }
}
