import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { SchedulerConfig } from './config.ts'
import { LEVELS } from './plugin.ts'
import type { FilterPlugin, Level, RemovalPlugin, SchedulerPlugin, ScorePlugin } from './plugin.ts'
import type { PluginRegistry } from './registry.ts'

export interface FilterUse {
  readonly plugin: FilterPlugin<unknown>
  readonly args: unknown
}

export interface ScoreUse {
  readonly plugin: ScorePlugin<unknown>
  readonly args: unknown
  readonly weight: number
}

export interface RemovalUse {
  readonly plugin: RemovalPlugin<unknown>
  readonly args: unknown
  readonly weight: number
}

type PerLevel<T> = readonly [readonly T[], readonly T[], readonly T[]]

/** A config's plugins looked up in a registry and sorted by the level they act at (zone, node, dispatcher). */
export interface ResolvedPlugins {
  readonly filters: PerLevel<FilterUse>
  readonly scores: PerLevel<ScoreUse>
  readonly removals: PerLevel<RemovalUse>
  /** Filters that cap a source's vreplicas. */
  readonly limits: readonly FilterUse[]
}

export function resolvePlugins(config: SchedulerConfig, registry: PluginRegistry): ResolvedPlugins {
  const lookup = <T extends SchedulerPlugin>(name: string, type: T['type']): T => {
    const plugin = registry.get(name)
    if (plugin === undefined || plugin.type !== type) {
      throw new ShoalError(
        ErrorCodes.CONFIG,
        `scheduler config names ${name}, which is not a registered ${type} plugin`
      )
    }
    return plugin as T
  }
  const filters = config.filters.map(e => ({ plugin: lookup<FilterPlugin<unknown>>(e.name, 'filter'), args: e.args }))
  const scores = config.scores.map(e => ({
    plugin: lookup<ScorePlugin<unknown>>(e.name, 'score'),
    args: e.args,
    weight: e.weight
  }))
  const removals = config.removals.map(e => ({
    plugin: lookup<RemovalPlugin<unknown>>(e.name, 'removal'),
    args: e.args,
    weight: e.weight
  }))
  const at = <T extends { readonly plugin: { readonly levels?: readonly Level[] } }>(uses: T[], level: Level) =>
    uses.filter(u => u.plugin.levels === undefined || u.plugin.levels.includes(level))
  return Object.freeze({
    filters: [at(filters, LEVELS[0]!), at(filters, LEVELS[1]!), at(filters, LEVELS[2]!)] as const,
    scores: [at(scores, LEVELS[0]!), at(scores, LEVELS[1]!), at(scores, LEVELS[2]!)] as const,
    removals: [at(removals, LEVELS[0]!), at(removals, LEVELS[1]!), at(removals, LEVELS[2]!)] as const,
    limits: filters.filter(f => f.plugin.limit !== undefined)
  })
}
