// The network lab's pure parts: its hosts and their addresses, the names of its namespaces, and the nftables
// rules each fault puts on a host. No I/O here (lab.ts and faults.ts apply them), so the rules are tested
// without root (net.test.ts).
//
// A lab is one switch namespace holding a Linux bridge, and one namespace per host, joined to the bridge by a
// veth pair (`eth0` in the host). Every host has one address in the lab's /24 and no route beyond it: no
// gateway, no NAT, nothing in the machine's own namespace. Faults are nftables rules in the host namespaces'
// table `inet shoal_lab` (chains `input` and `output`); healing flushes them.

import { createHash } from 'node:crypto'

/** What a host runs. A host with no zone (the sink host) is outside every zone: a zone cut leaves it reachable. */
export type HostRole = 'broker' | 'controller' | 'dispatcher' | 'sink'

/** A host of the layout, before it has a namespace and an address. */
export interface HostSpec {
  readonly name: string
  readonly role: HostRole
  readonly zone?: string
}

/** A host of a lab. */
export interface LabHost extends HostSpec {
  /** The network namespace, `<prefix><id>-<name>`. */
  readonly namespace: string
  /** Its one address, in the lab's /24. */
  readonly address: string
}

/** Everything a process needs to use a lab: written to `<dir>/lab.json`, named by SHOAL_LAB. */
export interface LabDescription {
  readonly id: string
  /** `10.237.N.0/24`, reachable only from the lab's own namespaces. */
  readonly subnet: string
  readonly switchNamespace: string
  /** Where the lab keeps its files (the brokers' data, logs, figures). */
  readonly dir: string
  readonly hosts: readonly LabHost[]
}

/** Every namespace of every lab starts with this; a lab's id follows, then `-`. */
export const NAMESPACE_PREFIX = 'shoal-lab-'
/** The nftables table of each host. */
export const TABLE = 'shoal_lab'
/** The host-side interface of each host's veth pair. */
export const HOST_INTERFACE = 'eth0'

/**
 * The default lab: three zones, each with a broker host and a controller host; four dispatcher hosts (two in
 * zone a); one sink host outside the zones, where the drills run (their sinks, producers and API calls).
 */
export function defaultHosts(): HostSpec[] {
  return [
    { name: 'sink', role: 'sink' },
    ...['a', 'b', 'c'].map(zone => ({ name: `broker-${zone}`, role: 'broker' as const, zone })),
    ...['a', 'b', 'c'].map(zone => ({ name: `controller-${zone}`, role: 'controller' as const, zone })),
    ...['a', 'b', 'c', 'a'].map((zone, i) => ({ name: `dispatcher-${i}`, role: 'dispatcher' as const, zone }))
  ]
}

/** Host numbers in the /24 by role: sink .10, brokers .11–, controllers .21–, dispatchers .31–. */
const FIRST_HOST: Readonly<Record<HostRole, number>> = { sink: 10, broker: 11, controller: 21, dispatcher: 31 }

/** A fresh lab id: 6 lower-case letters and digits. */
export function newLabId(random: () => number = Math.random): string {
  let id = ''
  while (id.length < 6) id += Math.floor(random() * 36).toString(36)
  return id
}

/** The third octet of a lab's /24, from its id: 10.237.0.0/16 holds every lab, one /24 each. */
export function subnetOf(id: string): string {
  const octet = createHash('sha256').update(id).digest()[0]!
  return `10.237.${octet}.0/24`
}

/** `shoal-lab-<id>-<suffix>`, the name of one of the lab's namespaces. */
export function namespaceOf(id: string, suffix: string): string {
  return `${NAMESPACE_PREFIX}${id}-${suffix}`
}

/** The lab id of a namespace name, or undefined if it is not a lab's. */
export function labIdOf(namespace: string): string | undefined {
  return new RegExp(`^${NAMESPACE_PREFIX}([a-z0-9]+)-`).exec(namespace)?.[1]
}

/** The lab's hosts with their namespaces and addresses. Throws on a duplicate name or a full role range. */
export function describeLab(id: string, dir: string, specs: readonly HostSpec[] = defaultHosts()): LabDescription {
  if (!/^[a-z0-9]+$/.test(id)) throw new Error(`lab id "${id}" must be lower-case letters and digits`)
  const subnet = subnetOf(id)
  const base = subnet.slice(0, subnet.lastIndexOf('.'))
  const next: Record<HostRole, number> = { ...FIRST_HOST }
  const names = new Set<string>()
  const hosts = specs.map(spec => {
    if (names.has(spec.name)) throw new Error(`two lab hosts named ${spec.name}`)
    if (!/^[a-z0-9-]+$/.test(spec.name)) throw new Error(`lab host name "${spec.name}" must be [a-z0-9-]`)
    names.add(spec.name)
    const number = next[spec.role]++
    if (number >= FIRST_HOST[spec.role] + 10 || number > 254) throw new Error(`too many ${spec.role} hosts`)
    return { ...spec, namespace: namespaceOf(id, spec.name), address: `${base}.${number}` }
  })
  return { id, subnet, switchNamespace: namespaceOf(id, 'switch'), dir, hosts }
}

/** The host called `name`. */
export function hostOf(lab: LabDescription, name: string): LabHost {
  const host = lab.hosts.find(h => h.name === name)
  if (!host) throw new Error(`no lab host ${name} (hosts: ${lab.hosts.map(h => h.name).join(', ')})`)
  return host
}

/** The hosts of a role, in layout order. */
export function hostsOf(lab: LabDescription, role: HostRole): LabHost[] {
  return lab.hosts.filter(h => h.role === role)
}

/** The zones of the lab, in layout order. */
export function zonesOf(lab: LabDescription): string[] {
  return [...new Set(lab.hosts.flatMap(h => (h.zone === undefined ? [] : [h.zone])))]
}

// ---- nftables ----

/** The table and its two chains, created empty on every host when the lab is made. */
export function baseRuleset(): string {
  return [
    `add table inet ${TABLE}`,
    `add chain inet ${TABLE} input { type filter hook input priority 0; policy accept; }`,
    `add chain inet ${TABLE} output { type filter hook output priority 0; policy accept; }`,
    ''
  ].join('\n')
}

/** Removes every fault from a host. */
export function healRuleset(): string {
  return [`flush chain inet ${TABLE} input`, `flush chain inet ${TABLE} output`, ''].join('\n')
}

/** A fault, as the drills name it. */
export type Fault =
  /** Every packet to and from the host's eth0 dropped: the host is gone from the network (it keeps running). */
  | { readonly kind: 'cut-host'; readonly host: string }
  /** The zone's hosts reach each other and the hosts outside every zone, but no host of another zone. */
  | { readonly kind: 'cut-zone'; readonly zone: string }
  /** Packets from `from` never reach `to`; those from `to` reach `from`. */
  | { readonly kind: 'cut-one-way'; readonly from: string; readonly to: string }
  /** Each packet between a host of `hosts` and one of `peers` dropped with probability `percent` %, each way. */
  | {
      readonly kind: 'lossy'
      readonly hosts: readonly string[]
      readonly peers: readonly string[]
      readonly percent: number
    }

/** What a fault adds to each host's chains: host name → nft commands (one script per host, applied at once). */
export function faultRules(lab: LabDescription, fault: Fault): Map<string, string> {
  const rules = new Map<string, string[]>()
  const add = (host: string, chain: 'input' | 'output', rule: string): void => {
    const list = rules.get(host) ?? []
    list.push(`add rule inet ${TABLE} ${chain} ${rule} comment "${describeFault(fault)}"`)
    rules.set(host, list)
  }
  switch (fault.kind) {
    case 'cut-host': {
      const host = hostOf(lab, fault.host)
      add(host.name, 'input', `iifname "${HOST_INTERFACE}" counter drop`)
      add(host.name, 'output', `oifname "${HOST_INTERFACE}" counter drop`)
      break
    }
    case 'cut-zone': {
      const inside = lab.hosts.filter(h => h.zone === fault.zone)
      if (inside.length === 0) throw new Error(`no lab host in zone ${fault.zone}`)
      const others = lab.hosts.filter(h => h.zone !== undefined && h.zone !== fault.zone).map(h => h.address)
      if (others.length === 0) throw new Error(`zone ${fault.zone} is the only zone: nothing to cut it from`)
      for (const host of inside) {
        add(host.name, 'input', `ip saddr ${addressSet(others)} counter drop`)
        add(host.name, 'output', `ip daddr ${addressSet(others)} counter drop`)
      }
      break
    }
    case 'cut-one-way': {
      const from = hostOf(lab, fault.from)
      const to = hostOf(lab, fault.to)
      add(to.name, 'input', `ip saddr ${from.address} counter drop`)
      break
    }
    case 'lossy': {
      if (!Number.isInteger(fault.percent) || fault.percent < 1 || fault.percent > 99) {
        throw new Error(`a lossy link drops 1–99 % of packets, not ${fault.percent}`)
      }
      const peers = fault.peers.map(name => hostOf(lab, name).address)
      for (const name of fault.hosts) {
        hostOf(lab, name)
        const drop = `numgen random mod 100 < ${fault.percent} counter drop`
        add(name, 'input', `ip saddr ${addressSet(peers)} ${drop}`)
        add(name, 'output', `ip daddr ${addressSet(peers)} ${drop}`)
      }
      break
    }
  }
  return new Map([...rules].map(([host, list]) => [host, list.join('\n') + '\n']))
}

/** A fault in a few words, for logs and rule comments. */
export function describeFault(fault: Fault): string {
  switch (fault.kind) {
    case 'cut-host':
      return `cut host ${fault.host}`
    case 'cut-zone':
      return `cut zone ${fault.zone}`
    case 'cut-one-way':
      return `cut ${fault.from} -> ${fault.to}`
    case 'lossy':
      return `lossy ${fault.percent}% ${fault.hosts.join(',')} <-> ${fault.peers.join(',')}`
  }
}

function addressSet(addresses: readonly string[]): string {
  return addresses.length === 1 ? addresses[0]! : `{ ${addresses.join(', ')} }`
}
