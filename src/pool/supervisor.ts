import type { PoolBounds, PoolDecision } from './decide.ts'
import { zoneOf } from './bounds.ts'

/** One dispatcher process the supervisor started. */
export interface DispatcherChild {
  /** Resolves when the process has exited, with its exit code (null after a signal). */
  readonly exited: Promise<number | null>
  kill(signal: NodeJS.Signals): void
}

export interface PoolSupervisorOptions {
  readonly bounds: PoolBounds
  /** Dispatcher N runs in zone N mod zones.length. */
  readonly zones: readonly string[]
  /** The leader's decision (`GET /shoal/v1/pool`); a rejection keeps the pool as it is (at least MIN). */
  readonly decision: () => Promise<Pick<PoolDecision, 'replicas' | 'reason' | 'message'>>
  /** Starts `shoal dispatcher --id <id> --zone <zone> …`. */
  readonly start: (id: string, ordinal: number, zone: string) => DispatcherChild
  /** How often the decision is read (default 500 ms). */
  readonly intervalMs?: number
  /** A dispatcher that exited by itself is started again after this long at the soonest (default 2 s). */
  readonly restartDelayMs?: number
  /** Told what the supervisor does: a line for people. */
  readonly log: (line: string) => void
}

interface Running {
  readonly id: string
  readonly ordinal: number
  readonly zone: string
  readonly child: DispatcherChild
  stopping: boolean
}

/**
 * `shoal up --dispatchers MIN..MAX`: runs dispatcher processes `dispatcher-0 … dispatcher-(replicas−1)`, as the
 * scheduler leader's pool decision says — what a StatefulSet does with the same number on Kubernetes. It starts the
 * missing ordinals, and stops (SIGTERM) those at or above `replicas`: the leader counts a dispatcher there only once
 * it has been drained and says it runs nothing. Never fewer than MIN nor more than MAX.
 */
export class PoolSupervisor {
  readonly #options: PoolSupervisorOptions
  readonly #running = new Map<number, Running>()
  /** When each ordinal last exited by itself: it is not started again at once. */
  readonly #exitedAt = new Map<number, number>()
  #timer: NodeJS.Timeout | undefined
  #ticking: Promise<void> = Promise.resolve()
  #stopped = false
  #lastReason = ''

  constructor(options: PoolSupervisorOptions) {
    this.#options = options
  }

  /** Starts the minimum at once, then follows the decision. */
  start(): void {
    this.#reconcile(this.#options.bounds.min)
    const every = this.#options.intervalMs ?? 500
    const loop = () => {
      this.#ticking = this.#tick().finally(() => {
        if (!this.#stopped) this.#timer = setTimeout(loop, every)
      })
    }
    this.#timer = setTimeout(loop, every)
  }

  /** The dispatchers running now (not being stopped), by ordinal. */
  running(): Array<{ readonly id: string; readonly zone: string }> {
    return [...this.#running.values()]
      .filter(r => !r.stopping)
      .sort((a, b) => a.ordinal - b.ordinal)
      .map(r => ({ id: r.id, zone: r.zone }))
  }

  /** Stops following and SIGTERMs every dispatcher; resolves when all have exited. */
  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#ticking
    for (const r of this.#running.values()) this.#terminate(r)
    await Promise.all([...this.#running.values()].map(r => r.child.exited))
  }

  async #tick(): Promise<void> {
    let replicas: number | undefined
    try {
      const decision = await this.#options.decision()
      replicas = decision.replicas
      const why = `${decision.reason}: ${decision.message}`
      if (why !== this.#lastReason && replicas !== this.running().length) this.#options.log(why)
      this.#lastReason = why
    } catch {
      // No leader right now: keep what runs (dispatchers keep their last contracts), at least the minimum.
    }
    if (this.#stopped) return
    this.#reconcile(replicas ?? Math.max(this.#options.bounds.min, this.#highest() + 1))
  }

  #highest(): number {
    return Math.max(-1, ...[...this.#running.values()].filter(r => !r.stopping).map(r => r.ordinal))
  }

  #reconcile(replicas: number): void {
    const { min, max } = this.#options.bounds
    const target = Math.min(max, Math.max(min, replicas))
    for (let ordinal = 0; ordinal < target; ordinal++) {
      if (this.#running.has(ordinal)) continue
      const exited = this.#exitedAt.get(ordinal)
      if (exited !== undefined && performance.now() - exited < (this.#options.restartDelayMs ?? 2_000)) continue
      this.#launch(ordinal)
    }
    for (const r of this.#running.values()) if (r.ordinal >= target) this.#terminate(r)
  }

  #launch(ordinal: number): void {
    const id = `dispatcher-${ordinal}`
    const zone = zoneOf(ordinal, this.#options.zones)
    const child = this.#options.start(id, ordinal, zone)
    const running: Running = { id, ordinal, zone, child, stopping: false }
    this.#running.set(ordinal, running)
    this.#options.log(`started ${id} (zone ${zone})`)
    void child.exited.then(code => {
      if (this.#running.get(ordinal) === running) this.#running.delete(ordinal)
      if (running.stopping) this.#options.log(`stopped ${id}`)
      else {
        this.#exitedAt.set(ordinal, performance.now())
        this.#options.log(`${id} exited by itself (${code ?? 'signal'}); it is started again`)
      }
    })
  }

  #terminate(r: Running): void {
    if (r.stopping) return
    r.stopping = true
    r.child.kill('SIGTERM')
  }
}
