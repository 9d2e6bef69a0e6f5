import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { PluginType, SchedulerPlugin } from './plugin.ts'
import { EvenPodSpread, NoMaxResourceCount, PodFitsResources } from './plugins/filters.ts'
import {
  RemoveWithAvailabilityNodePriority,
  RemoveWithAvailabilityZonePriority,
  RemoveWithEvenPodSpreadPriority,
  RemoveWithHighestOrdinalPriority
} from './plugins/removals.ts'
import { AvailabilityNodePriority, AvailabilityZonePriority, LowestOrdinalPriority } from './plugins/scores.ts'

/**
 * The plugins a scheduler may use, by name: a value handed to the scheduler and to the config loader, never a
 * global. Registering a name twice throws SHOAL_CONFIG.
 */
export class PluginRegistry {
  readonly #plugins = new Map<string, SchedulerPlugin>()

  /** Adds a plugin; returns the registry, so calls chain. */
  register(plugin: SchedulerPlugin): this {
    if (this.#plugins.has(plugin.name)) {
      throw new ShoalError(ErrorCodes.CONFIG, `scheduler plugin ${plugin.name} is already registered`)
    }
    this.#plugins.set(plugin.name, Object.freeze(plugin))
    return this
  }

  get(name: string): SchedulerPlugin | undefined {
    return this.#plugins.get(name)
  }

  /** The names of the registered plugins of one type, sorted. */
  names(type: PluginType): string[] {
    return [...this.#plugins.values()]
      .filter(p => p.type === type)
      .map(p => p.name)
      .sort()
  }
}

/** The plugins Shoal ships, under the names Knative's eventing scheduler gives them. */
export const BUILTIN_PLUGINS: readonly SchedulerPlugin[] = Object.freeze([
  PodFitsResources,
  NoMaxResourceCount,
  EvenPodSpread,
  AvailabilityZonePriority,
  AvailabilityNodePriority,
  LowestOrdinalPriority,
  RemoveWithAvailabilityZonePriority,
  RemoveWithAvailabilityNodePriority,
  RemoveWithHighestOrdinalPriority,
  RemoveWithEvenPodSpreadPriority
])

/** A new registry holding the built-in plugins; register your own on it. */
export function createRegistry(): PluginRegistry {
  const registry = new PluginRegistry()
  for (const plugin of BUILTIN_PLUGINS) registry.register(plugin)
  return registry
}
