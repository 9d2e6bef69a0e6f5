import type { VPod } from './types.ts'

/**
 * The levels of the placement descent: a vreplica first picks a zone, then a node in it, then a dispatcher on
 * that node. Plugins see aggregates at the first two levels, never every dispatcher of the pool.
 */
export type Level = 'zone' | 'node' | 'dispatcher'

/** Every level, in descent order. */
export const LEVELS: readonly Level[] = Object.freeze(['zone', 'node', 'dispatcher'])

/** One place a vreplica of the source could go, at one level of the descent. */
export interface Candidate {
  readonly level: Level
  /** The zone, node or dispatcher id. */
  readonly name: string
  /** The zone it lies in (its own name at the zone level). */
  readonly zone: string
  /** Free slots of the source's kind on the schedulable dispatchers it holds (always at least 1). */
  readonly free: number
  /** Slots of the source's kind on the schedulable dispatchers it holds. */
  readonly capacity: number
  /** Vreplicas of this source already there. */
  readonly placed: number
  /** The lowest ordinal of a dispatcher there with a free slot (the dispatcher's own at that level). */
  readonly lowestOrdinal: number
}

/**
 * What a plugin knows besides the candidate: the source and the other candidates at this level (those offered for
 * a placement, or those holding some of the source for a removal).
 */
export interface LevelContext {
  readonly vpod: VPod
  readonly level: Level
  /** Vreplicas of the source placed now. */
  readonly placed: number
  /** Fewest and most of the source's vreplicas on any candidate at this level. */
  readonly minPlaced: number
  readonly maxPlaced: number
  /** The highest ordinal in the pool, to normalise ordinal scores. */
  readonly maxOrdinal: number
  /** How many candidates there are at this level. */
  readonly candidates: number
}

/** What a filter or score plugin knows besides the candidate. */
export type PlacementContext = LevelContext

/**
 * A place one vreplica of the source could be removed from (scale-down), at one level of the removal descent:
 * a zone holding some of the source, then a node in it, then a dispatcher on that node.
 */
export interface RemovalCandidate {
  readonly level: Level
  /** The zone, node or dispatcher id. */
  readonly name: string
  /** The zone it lies in (its own name at the zone level). */
  readonly zone: string
  /** Vreplicas of this source there (at least 1). */
  readonly placed: number
  /** The highest ordinal of a dispatcher there holding some of the source (the dispatcher's own at that level). */
  readonly highestOrdinal: number
}

/** What a removal plugin knows besides the candidate. */
export type RemovalContext = LevelContext

/** A plugin's arguments: a JSON Schema (checked with ajv when a config is loaded) and their defaults. */
export interface ArgsSpec<Args> {
  readonly schema: Readonly<Record<string, unknown>>
  readonly defaults: Args
}

/** What every plugin has: its type, the name configs use, the levels it acts at and its arguments. */
export interface PluginBasics<Type extends string, Args> {
  readonly type: Type
  readonly name: string
  /** The levels it acts at (all when absent; none for a filter that only sets a limit). */
  readonly levels?: readonly Level[]
  readonly args?: ArgsSpec<Args>
}

/** Drops candidates that cannot take one more vreplica of the source. */
export interface FilterPlugin<Args = undefined> extends PluginBasics<'filter', Args> {
  /** True when the candidate may take one more vreplica. */
  filter(candidate: Candidate, context: PlacementContext, args: Args): boolean
  /** The most vreplicas the source may have; the rest is neither placed nor pending. */
  limit?(vpod: VPod, args: Args): number
}

/** Ranks the candidates left by the filters; the highest weighted sum wins, ties go to the first one. */
export interface ScorePlugin<Args = undefined> extends PluginBasics<'score', Args> {
  /** A score in [0, 1], higher is better; multiplied by the plugin's weight. */
  score(candidate: Candidate, context: PlacementContext, args: Args): number
}

/** Ranks where a source's vreplica could be removed from; the highest weighted sum goes first. */
export interface RemovalPlugin<Args = undefined> extends PluginBasics<'removal', Args> {
  /** A score in [0, 1], higher means remove from here first; multiplied by the plugin's weight. */
  score(candidate: RemovalCandidate, context: RemovalContext, args: Args): number
}

/** Any plugin, as a registry holds it. */
export type SchedulerPlugin = FilterPlugin<unknown> | ScorePlugin<unknown> | RemovalPlugin<unknown>

/** The plugin types, as configs name their sections. */
export type PluginType = SchedulerPlugin['type']

/** Builds a frozen filter plugin: `defineFilter({ name, filter: (candidate, context, args) => boolean })`. */
export function defineFilter<Args = undefined>(spec: Omit<FilterPlugin<Args>, 'type'>): FilterPlugin<Args> {
  return Object.freeze({ ...spec, type: 'filter' })
}

/** Builds a frozen score plugin: `defineScore({ name, score: (candidate, context, args) => number })`. */
export function defineScore<Args = undefined>(spec: Omit<ScorePlugin<Args>, 'type'>): ScorePlugin<Args> {
  return Object.freeze({ ...spec, type: 'score' })
}

/** Builds a frozen removal plugin: `defineRemoval({ name, score: (candidate, context, args) => number })`. */
export function defineRemoval<Args = undefined>(spec: Omit<RemovalPlugin<Args>, 'type'>): RemovalPlugin<Args> {
  return Object.freeze({ ...spec, type: 'removal' })
}
