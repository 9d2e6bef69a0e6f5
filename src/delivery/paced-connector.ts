import type { Socket } from 'node:net'
import type { buildConnector } from 'undici'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import { ConnectWindow } from './connect-window.ts'
import type { ConnectVerdict, ConnectWindowOptions } from './connect-window.ts'
import { TcpQueues } from './tcp-queues.ts'

// New connections to one sink origin, opened in a window (see connect-window.ts) and looked at every 100 ms until
// the sink shows it accepted them: an answer byte, or (on Linux) the request bytes acknowledged by its kernel. A
// connection whose request stays unacknowledged, with no progress, for `notAcceptedMs` was dropped by the
// sink's accept queue: it is destroyed with SHOAL_SINK_NOT_ACCEPTED, and the request on it is sent again on
// another connection (SinkClient). Without this, such a request waits for the sink's kernel to give up on the
// half-open connection and reset it: about two minutes with Linux's defaults.

/** How connections to one origin are paced and watched. */
export interface PacedConnectorOptions {
  readonly window?: ConnectWindowOptions
  /** Request bytes unacknowledged this long, with no progress, on an unproven connection: never accepted. */
  readonly notAcceptedMs?: number
  /** How often unproven connections are looked at. */
  readonly probeEveryMs?: number
  /** Where unacknowledged bytes are read (one reader for the process). */
  readonly queues?: TcpQueues
}

/** Told whenever the connections an origin can use change (proven, closed, window moved). */
export type ConnectionsChanged = (usable: number) => void

/** What the connections to one origin look like now, and what happened to them. */
export interface OriginConnectionFigures {
  /** Open connections the sink is known to have accepted. */
  readonly proven: number
  /** Connections that may be unproven at once now. */
  readonly window: number
  /** Connections opened and not yet proven. */
  readonly unproven: number
  /** Connects waiting for the window. */
  readonly waiting: number
  /** Connections found never accepted, since the start (each one's request was sent again). */
  readonly notAccepted: number
  /** Connects that failed (refused or timed out), since the start. */
  readonly connectFailures: number
}

/** The default time request bytes may stay unacknowledged on a new connection before it counts as never accepted. */
export const NOT_ACCEPTED_MS = 2_000

/**
 * A connection proven later than this after its connect started had a handshake packet dropped and sent again
 * (Linux sends a SYN again after 1 s): the sink's backlog overflowed, and the window halves.
 */
export const LATE_MS = 900

const sharedQueues = new TcpQueues()
const provenSockets = new WeakSet<Socket>()

interface Pending {
  readonly options: buildConnector.Options
  readonly callback: buildConnector.Callback
  readonly inner: buildConnector.connector
}

interface Watched {
  readonly socket: Socket
  /** When its connect started; a proof later than LATE_MS after it means a handshake packet was sent again. */
  readonly openedAt: number
  /** The unacknowledged byte count last seen, and since when it has been that. */
  unacked: number
  unackedSince: number
}

/** Paces and watches the new connections of one sink origin, for every pool (trust set) of that origin. */
export class PacedConnector {
  readonly #window: ConnectWindow
  readonly #notAcceptedMs: number
  readonly #probeEveryMs: number
  readonly #queues: TcpQueues
  readonly #pending: Pending[] = []
  readonly #watched = new Map<Socket, Watched>()
  #probe: NodeJS.Timeout | undefined
  #resume: NodeJS.Timeout | undefined
  readonly #changed: ConnectionsChanged | undefined
  #proven = 0
  #notAccepted = 0
  #connectFailures = 0
  #closed = false

  constructor(options: PacedConnectorOptions = {}, changed?: ConnectionsChanged) {
    this.#changed = changed
    this.#window = new ConnectWindow(options.window)
    this.#notAcceptedMs = options.notAcceptedMs ?? NOT_ACCEPTED_MS
    this.#probeEveryMs = options.probeEveryMs ?? 100
    this.#queues = options.queues ?? sharedQueues
  }

  get figures(): OriginConnectionFigures {
    return {
      proven: this.#proven,
      window: this.#window.window,
      unproven: this.#window.unproven,
      waiting: this.#pending.length,
      notAccepted: this.#notAccepted,
      connectFailures: this.#connectFailures
    }
  }

  /**
   * Requests worth handing to the pools at once: one per proven connection, plus the connects the window allows.
   * More would bind requests to connects that must wait for the window, while proven connections fall idle.
   */
  get usable(): number {
    return this.#proven + this.#window.window
  }

  /** The most unproven connections there ever were at once. */
  get peakUnproven(): number {
    return this.#window.peakUnproven
  }

  /** `inner` (undici's connector for one pool) behind this origin's window. */
  wrap(inner: buildConnector.connector): buildConnector.connector {
    return (options, callback) => {
      if (this.#closed) {
        callback(new Error('the sink client is closed'), null)
        return
      }
      this.#pending.push({ options, callback, inner })
      this.#pump()
    }
  }

  /** Fails connects still waiting and stops watching; the pools destroy the sockets. */
  close(): void {
    this.#closed = true
    clearTimeout(this.#probe)
    clearTimeout(this.#resume)
    for (const pending of this.#pending.splice(0)) pending.callback(new Error('the sink client is closed'), null)
    for (const watched of this.#watched.values()) this.#unwatch(watched)
  }

  #pump(): void {
    const now = performance.now()
    while (this.#pending.length > 0 && this.#window.mayOpen(now)) {
      const pending = this.#pending.shift()!
      this.#window.opened(now)
      this.#open(pending)
    }
    // Paused after refusals: look again when the pause ends (an open slot alone re-pumps from settle).
    if (this.#pending.length > 0 && this.#resume === undefined && this.#window.notBefore > now) {
      this.#resume = setTimeout(() => {
        this.#resume = undefined
        this.#pump()
      }, this.#window.notBefore - now)
      this.#resume.unref()
    }
  }

  #open({ options, callback, inner }: Pending): void {
    const openedAt = performance.now()
    inner(options, (error, socket) => {
      if (error !== null || socket === null) {
        this.#connectFailures++
        this.#settle(verdictOf(error))
        callback(error ?? new Error('connect failed'), null)
        return
      }
      const watched: Watched = { socket, openedAt, unacked: 0, unackedSince: performance.now() }
      socket.once('close', () => {
        // Closed unproven: proven all the same if an answer came (a sink that closes after each answer).
        if (this.#unwatch(watched)) this.#settle(socket.bytesRead > 0 ? provenAfter(openedAt) : 'closed')
        else if (provenSockets.has(socket)) {
          provenSockets.delete(socket)
          this.#proven--
          this.#changed?.(this.usable)
        }
      })
      // A TLS connection is handed over after the sink's half of the handshake: the sink accepted it.
      if ('encrypted' in socket || socket.bytesRead > 0) this.#prove(socket, openedAt)
      else this.#watch(watched)
      callback(null, socket)
    })
  }

  #watch(watched: Watched): void {
    this.#watched.set(watched.socket, watched)
    if (this.#probe === undefined) {
      this.#probe = setInterval(() => this.#look(), this.#probeEveryMs)
      this.#probe.unref()
    }
  }

  /** Stops watching; false if it was not watched any more. */
  #unwatch(watched: Watched): boolean {
    if (!this.#watched.delete(watched.socket)) return false
    if (this.#watched.size === 0 && this.#probe !== undefined) {
      clearInterval(this.#probe)
      this.#probe = undefined
    }
    return true
  }

  #provenWatched(watched: Watched): void {
    if (this.#unwatch(watched)) this.#prove(watched.socket, watched.openedAt)
  }

  #prove(socket: Socket, openedAt: number): void {
    provenSockets.add(socket)
    this.#proven++
    this.#settle(provenAfter(openedAt))
  }

  #look(): void {
    const now = performance.now()
    for (const watched of [...this.#watched.values()]) {
      const { socket } = watched
      const localPort = socket.localPort
      const remotePort = socket.remotePort
      if (socket.destroyed || localPort === undefined || remotePort === undefined) continue
      // An answer came: the sink reads this connection. (Read here, not by a 'data' listener, which would change
      // how undici reads the socket.)
      if (socket.bytesRead > 0) {
        this.#provenWatched(watched)
        continue
      }
      // Nothing written yet: nothing to be acknowledged.
      if (socket.bytesWritten === 0) continue
      const unacked = this.#queues.unackedBytes({ localPort, remotePort })
      if (unacked === undefined) continue
      if (unacked === 0) {
        // Everything written was acknowledged: the connection is in the sink's accept queue, or accepted.
        this.#provenWatched(watched)
        continue
      }
      if (unacked !== watched.unacked) {
        watched.unacked = unacked
        watched.unackedSince = now
        continue
      }
      if (now - watched.unackedSince < this.#notAcceptedMs) continue
      this.#unwatch(watched)
      this.#notAccepted++
      this.#settle('never-accepted')
      socket.destroy(
        new ShoalError(
          ErrorCodes.SINK_NOT_ACCEPTED,
          `the sink never accepted the connection (${unacked} request bytes unacknowledged for ${Math.round(now - watched.unackedSince)} ms: its listen backlog is full)`,
          { retriable: true }
        )
      )
    }
  }

  #settle(verdict: ConnectVerdict): void {
    this.#window.settled(verdict, performance.now())
    this.#changed?.(this.usable)
    if (!this.#closed) this.#pump()
  }
}

function provenAfter(openedAt: number): ConnectVerdict {
  return performance.now() - openedAt > LATE_MS ? 'proven-late' : 'proven'
}

const TIMED_OUT = new Set(['UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT'])
const REFUSED = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL'])

function verdictOf(error: Error | null): ConnectVerdict {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return 'closed'
  if (TIMED_OUT.has(code)) return 'timed-out'
  if (REFUSED.has(code)) return 'refused'
  return 'closed'
}
