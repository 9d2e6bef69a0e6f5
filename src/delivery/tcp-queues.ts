import { readFileSync } from 'node:fs'

// How many bytes each of this network namespace's TCP connections has sent that the peer's kernel has not yet
// acknowledged (the `tx_queue` column of /proc/net/tcp and tcp6). A peer's kernel acknowledges request bytes as
// soon as the connection is in its accept queue, whether or not the server has read them; it acknowledges
// nothing on a connection it dropped from an overflowing accept queue (the client believes it ESTABLISHED). So
// bytes that stay unacknowledged on a loopback or LAN connection for seconds mean the server never accepted it.
// Linux only; elsewhere `unackedBytes` answers undefined and callers fall back to answers alone.

/** A connection as /proc names it: local and remote port (the addresses are the socket's own). */
export interface TcpEnds {
  readonly localPort: number
  readonly remotePort: number
}

/** `tx_queue` by `localPort>remotePort` for the ESTABLISHED connections in one /proc/net/tcp text. Pure. */
export function parseTcpTable(text: string): Map<string, number> {
  const queues = new Map<string, number>()
  const lines = text.split('\n')
  // The first line is the header.
  for (let i = 1; i < lines.length; i++) {
    const fields = lines[i]!.trim().split(/\s+/)
    // sl local_address rem_address st tx_queue:rx_queue …
    if (fields.length < 5 || fields[3] !== '01') continue
    const local = portOf(fields[1]!)
    const remote = portOf(fields[2]!)
    const tx = Number.parseInt(fields[4]!.split(':')[0] ?? '', 16)
    if (local === undefined || remote === undefined || !Number.isFinite(tx)) continue
    queues.set(`${local}>${remote}`, tx)
  }
  return queues
}

function portOf(address: string): number | undefined {
  const colon = address.lastIndexOf(':')
  if (colon < 0) return undefined
  const port = Number.parseInt(address.slice(colon + 1), 16)
  return Number.isSafeInteger(port) ? port : undefined
}

/** Reads the tables at most once per `maxAgeMs`, for every connection asked about in that time. */
export class TcpQueues {
  readonly #files: readonly string[]
  readonly #maxAgeMs: number
  #table: Map<string, number> | undefined
  #readAt = Number.NEGATIVE_INFINITY
  #available = true

  constructor(files: readonly string[] = ['/proc/net/tcp', '/proc/net/tcp6'], maxAgeMs = 50) {
    this.#files = files
    this.#maxAgeMs = maxAgeMs
  }

  /** Whether the tables could be read (false after the first failed read: not Linux, or no /proc). */
  get available(): boolean {
    return this.#available
  }

  /** Bytes sent on the connection and not yet acknowledged; undefined when unknown (no table, or not listed). */
  unackedBytes(ends: TcpEnds): number | undefined {
    if (!this.#available) return undefined
    const now = performance.now()
    if (this.#table === undefined || now - this.#readAt > this.#maxAgeMs) {
      const table = new Map<string, number>()
      let read = false
      for (const file of this.#files) {
        try {
          for (const [key, value] of parseTcpTable(readFileSync(file, 'latin1'))) table.set(key, value)
          read = true
        } catch {
          // tcp6 may be missing (IPv6 off); both missing: not available.
        }
      }
      if (!read) {
        this.#available = false
        return undefined
      }
      this.#table = table
      this.#readAt = now
    }
    return this.#table.get(`${ends.localPort}>${ends.remotePort}`)
  }
}
