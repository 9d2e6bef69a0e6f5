// Faults as the lab makes them: network faults are nftables rules in the hosts' namespaces (net.ts builds
// them), process faults are signals. Every network fault stays until heal(); several may be in force at once.

import { describeFault, faultRules, healRuleset, hostOf, zonesOf } from './net.ts'
import type { Fault, LabDescription } from './net.ts'
import { mustOn } from './lab.ts'

/** The network faults of a lab. */
export class NetworkFaults {
  readonly #lab: LabDescription
  readonly #log: (line: string) => void
  readonly #active: Fault[] = []

  constructor(lab: LabDescription, log: (line: string) => void = line => console.log(`# ${line}`)) {
    this.#lab = lab
    this.#log = log
  }

  /** The faults in force, oldest first. */
  get active(): readonly Fault[] {
    return this.#active
  }

  /** Puts a fault in force: each host's rules are applied in one nft transaction. Resolves when all are. */
  async apply(fault: Fault): Promise<number> {
    const rules = faultRules(this.#lab, fault)
    await Promise.all([...rules].map(([host, script]) => mustOn(hostOf(this.#lab, host), 'nft', ['-f', '-'], script)))
    this.#active.push(fault)
    const at = Date.now()
    this.#log(`lab: ${describeFault(fault)} (${[...rules.keys()].join(', ')})`)
    return at
  }

  /** Every packet to and from the host dropped. */
  cutHost(host: string): Promise<number> {
    return this.apply({ kind: 'cut-host', host })
  }

  /** The zone's hosts keep reaching each other and the hosts outside every zone (the sink host), not the other zones. */
  cutZone(zone: string): Promise<number> {
    if (!zonesOf(this.#lab).includes(zone)) throw new Error(`no zone ${zone} in the lab`)
    return this.apply({ kind: 'cut-zone', zone })
  }

  /** Packets from `from` never reach `to`; the other way they do. */
  cutOneWay(from: string, to: string): Promise<number> {
    return this.apply({ kind: 'cut-one-way', from, to })
  }

  /** `percent` % of the packets between each of `hosts` and each of `peers` dropped, each way, at random. */
  lossy(hosts: readonly string[], peers: readonly string[], percent: number): Promise<number> {
    return this.apply({ kind: 'lossy', hosts, peers, percent })
  }

  /** Removes every fault from every host. */
  async heal(): Promise<number> {
    await Promise.all(this.#lab.hosts.map(host => mustOn(host, 'nft', ['-f', '-'], healRuleset())))
    const healed = this.#active.splice(0).map(describeFault)
    const at = Date.now()
    if (healed.length > 0) this.#log(`lab: healed (${healed.join('; ')})`)
    return at
  }

  /** The packets each host's fault rules dropped so far, by host (from the rules' counters). */
  async dropped(): Promise<Map<string, number>> {
    const out = new Map<string, number>()
    await Promise.all(
      this.#lab.hosts.map(async host => {
        const listed = await mustOn(host, 'nft', ['list', 'table', 'inet', 'shoal_lab'])
        const packets = [...listed.matchAll(/counter packets (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0)
        if (packets > 0) out.set(host.name, packets)
      })
    )
    return out
  }
}

/** SIGSTOPs a process: it keeps its sockets and state, and answers nothing, until resume(). */
export function pause(pid: number): number {
  process.kill(pid, 'SIGSTOP')
  return Date.now()
}

/** SIGCONTs a paused process: it goes on from where it was, as a zombie that has missed what happened meanwhile. */
export function resume(pid: number): number {
  process.kill(pid, 'SIGCONT')
  return Date.now()
}
