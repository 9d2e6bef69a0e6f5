import { lookup as dnsLookup } from 'node:dns'
import type { LookupAddress, LookupAllOptions, LookupOptions } from 'node:dns'
import { BlockList, isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { buildConnector } from 'undici'
import { ErrorCodes, ShoalError } from '../errors/index.ts'

// Where a multi-tenant Shoal refuses to send events: forbidden address ranges (cloud metadata services at
// link-local addresses, by default) and Shoal's own endpoints. Checked by the API when a source is applied
// (on what the URL says) and by the dispatcher when it connects (on the addresses DNS gave), so a name that
// resolves to a forbidden address later is still refused.

/** Ranges refused unless the operator configures others: IPv4 and IPv6 link-local (169.254.169.254 is the metadata service). */
export const DEFAULT_FORBIDDEN_CIDRS: readonly string[] = Object.freeze(['169.254.0.0/16', 'fe80::/10'])

/** A `--forbidden-sink-cidrs` value: CIDRs separated by commas; `default` stands for DEFAULT_FORBIDDEN_CIDRS, `none` for none. */
export function parseCidrList(text: string | undefined): readonly string[] {
  if (text === undefined) return DEFAULT_FORBIDDEN_CIDRS
  return text
    .split(',')
    .map(s => s.trim())
    .filter(s => s !== '' && s !== 'none')
    .flatMap(s => (s === 'default' ? DEFAULT_FORBIDDEN_CIDRS : [s]))
}

export interface SinkPolicyOptions {
  /** CIDR ranges (`10.0.0.0/8`, `fd00::/8`) no sink may reach. Default DEFAULT_FORBIDDEN_CIDRS. */
  readonly forbiddenCidrs?: readonly string[]
  /** Shoal's own endpoints as URLs or `host:port`; read at each check, since replicas come and go. */
  readonly ownEndpoints?: () => readonly string[]
  /** DNS lookup (for tests); default node:dns lookup. */
  readonly lookup?: typeof dnsLookup
}

/** A connection the policy refused: SHOAL_SINK_REFUSED, naming the address and the rule. */
function refused(message: string): ShoalError {
  return new ShoalError(ErrorCodes.SINK_REFUSED, message)
}

interface Range {
  readonly text: string
  readonly list: BlockList
}

interface Endpoint {
  readonly host: string
  readonly port: number
}

/** A parsed, frozen sink policy. */
export class SinkPolicy {
  readonly forbiddenCidrs: readonly string[]
  readonly #ranges: readonly Range[]
  readonly #ownEndpoints: () => readonly string[]
  readonly #lookup: typeof dnsLookup

  /** Throws a RangeError naming the first CIDR that does not parse. */
  constructor(options: SinkPolicyOptions = {}) {
    const cidrs = options.forbiddenCidrs ?? DEFAULT_FORBIDDEN_CIDRS
    this.#ranges = cidrs.map(parseCidr)
    this.forbiddenCidrs = Object.freeze([...cidrs])
    this.#ownEndpoints = options.ownEndpoints ?? (() => [])
    this.#lookup = options.lookup ?? dnsLookup
  }

  /** Why connecting to `address:port` is refused, or undefined. `address` is an IP address. */
  checkAddress(address: string, port: number): string | undefined {
    const ip = unbracket(address).replace(/%.*$/, '')
    const family = isIP(ip)
    if (family === 0) return undefined
    const type = family === 4 ? 'ipv4' : 'ipv6'
    const range = this.#ranges.find(r => r.list.check(ip, type))
    if (range !== undefined) return `${ip} is in the forbidden range ${range.text}`
    for (const endpoint of this.#endpoints()) {
      if (endpoint.port !== port || isIP(endpoint.host) === 0) continue
      if (sameAddress(endpoint.host, ip) || (isUnspecified(endpoint.host) && isLocalAddress(ip))) {
        return `${ip}:${port} is Shoal's own endpoint`
      }
    }
    return undefined
  }

  /**
   * Why a sink URL is refused on what it says alone (no DNS): an IP literal in a forbidden range, or the
   * host and port of one of Shoal's own endpoints (`localhost` counting as loopback). Undefined if allowed.
   */
  checkUrl(uri: string): string | undefined {
    if (!URL.canParse(uri)) return undefined
    const url = new URL(uri)
    const host = unbracket(url.hostname).toLowerCase()
    const port = portOf(url)
    if (isIP(host) !== 0) return this.checkAddress(host, port)
    for (const endpoint of this.#endpoints()) {
      if (endpoint.port !== port) continue
      const ownHost = endpoint.host.toLowerCase()
      const localhost = host === 'localhost' || host.endsWith('.localhost')
      if (ownHost === host || (localhost && (isLoopback(ownHost) || isUnspecified(ownHost)))) {
        return `${host}:${port} is Shoal's own endpoint`
      }
    }
    return undefined
  }

  /**
   * A `lookup` for net.connect that refuses forbidden addresses after resolution: every address DNS gives
   * is checked, so a name with one allowed and one forbidden address is refused outright.
   */
  lookupFor(port: number): LookupFunction {
    return (hostname, options, callback) => {
      this.#lookup(hostname, { ...options, all: true } as LookupAllOptions, (error, addresses) => {
        if (error) return callback(error, options.all ? [] : '', 0)
        for (const a of addresses) {
          const reason = this.checkAddress(a.address, port)
          if (reason !== undefined) {
            return callback(refused(`sink ${hostname} refused: ${reason}`), options.all ? [] : '', 0)
          }
        }
        if (options.all) return callback(null, addresses)
        const first = addresses[0]
        if (first === undefined)
          return callback(Object.assign(new Error(`${hostname}: no address`), { code: 'ENOTFOUND' }), '', 0)
        return callback(null, first.address, first.family)
      })
    }
  }

  /**
   * An undici connector for one origin that refuses forbidden addresses: IP literals before connecting,
   * names after DNS resolution. `connectOptions` are undici's (timeout, TLS `ca`, …).
   */
  connectorFor(origin: string, connectOptions: buildConnector.BuildOptions): buildConnector.connector {
    const port = portOf(new URL(origin))
    const base = buildConnector({ ...connectOptions, lookup: this.lookupFor(port) })
    return (options, callback) => {
      const host = unbracket(options.hostname)
      const reason = isIP(host) === 0 ? undefined : this.checkAddress(host, port)
      if (reason !== undefined) {
        callback(refused(`sink ${host} refused: ${reason}`), null)
        return
      }
      base(options, callback)
    }
  }

  #endpoints(): Endpoint[] {
    return this.#ownEndpoints().flatMap(parseEndpoint)
  }
}

type LookupFunction = (
  hostname: string,
  options: LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void
) => void

/** `10.0.0.0/8` → a one-range BlockList; throws RangeError naming the text if it is not a CIDR. */
function parseCidr(text: string): Range {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text.trim())
  const address = match?.[1] ?? ''
  const family = isIP(address)
  const bits = Number(match?.[2])
  if (match === null || family === 0 || bits > (family === 4 ? 32 : 128)) {
    throw new RangeError(`"${text}" is not a CIDR range (for example 169.254.0.0/16 or fe80::/10)`)
  }
  const list = new BlockList()
  list.addSubnet(address, bits, family === 4 ? 'ipv4' : 'ipv6')
  return { text: text.trim(), list }
}

/** `http://host:port/…` or `host:port` → endpoints; what does not parse is ignored. */
function parseEndpoint(text: string): Endpoint[] {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`
  if (!URL.canParse(withScheme)) return []
  const url = new URL(withScheme)
  return [{ host: unbracket(url.hostname), port: portOf(url) }]
}

function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port)
  return url.protocol === 'https:' ? 443 : 80
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
}

const loopback = new BlockList()
loopback.addSubnet('127.0.0.0', 8, 'ipv4')
loopback.addAddress('::1', 'ipv6')

function isLoopback(address: string): boolean {
  const family = isIP(address)
  return family !== 0 && loopback.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

function isUnspecified(address: string): boolean {
  return address === '0.0.0.0' || address === '::'
}

function isLocalAddress(address: string): boolean {
  if (isLoopback(address)) return true
  return Object.values(networkInterfaces()).some(list => list?.some(i => sameAddress(i.address, address)))
}

function sameAddress(a: string, b: string): boolean {
  if (a === b) return true
  const fa = isIP(a)
  const fb = isIP(b)
  if (fa === 0 || fb === 0) return false
  const one = new BlockList()
  one.addAddress(a, fa === 4 ? 'ipv4' : 'ipv6')
  return one.check(b, fb === 4 ? 'ipv4' : 'ipv6')
}
