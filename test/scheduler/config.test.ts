import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { ErrorCodes, ShoalError } from '../../src/errors/index.ts'
import {
  BUILTIN_PLUGINS,
  PluginRegistry,
  SCHEDULER_PROFILES,
  Scheduler,
  createRegistry,
  defineScore,
  loadSchedulerConfig,
  parseSchedulerConfig
} from '../../src/scheduler/index.ts'

function configError(fn: () => unknown): ShoalError {
  try {
    fn()
  } catch (error) {
    assert.ok(error instanceof ShoalError, String(error))
    assert.equal(error.code, ErrorCodes.CONFIG)
    return error
  }
  assert.fail('expected a SHOAL_CONFIG error')
}

const base = { filters: [], scores: [], removals: [] }

describe('scheduler config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shoal-scheduler-config-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('ships the ha and compact profiles, both valid', () => {
    for (const name of ['ha', 'compact'] as const) {
      const config = loadSchedulerConfig(name)
      assert.deepEqual(
        config.scores.map(s => s.name),
        SCHEDULER_PROFILES[name].scores.map(s => s.name)
      )
      assert.ok(Object.isFrozen(config) && Object.isFrozen(config.filters[0]))
    }
    assert.deepEqual(loadSchedulerConfig('ha').filters.at(-1), { name: 'EvenPodSpread', args: { maxSkew: 1 } })
  })

  it('defaults plugin arguments and balancedness weights', () => {
    const config = parseSchedulerConfig({ ...base, filters: [{ name: 'EvenPodSpread' }] }, createRegistry())
    assert.deepEqual(config.filters[0], { name: 'EvenPodSpread', args: { maxSkew: 1 } })
    assert.deepEqual(config.balancedness, { zoneSpread: 4, nodeSpread: 3, load: 3 })
  })

  it('names every bad field by its path, in one error', () => {
    const error = configError(() =>
      parseSchedulerConfig(
        {
          filters: [{ name: 'EvenPodSpread', args: { maxSkew: 0 } }, { name: 'NoSuchFilter' }],
          scores: [
            { name: 'AvailabilityZonePriority', weight: 0 },
            { name: 'LowestOrdinalPriority', weight: 1.5 },
            { name: 'AvailabilityNodePriority' }
          ],
          removals: [{ name: 'RemoveWithHighestOrdinalPriority', weight: 1, extra: true }],
          colour: 'blue'
        },
        createRegistry(),
        'scheduler config x.yaml'
      )
    )
    const paths = error.fields.map(f => f.path).sort()
    assert.deepEqual(paths, ['colour', 'removals[0].extra', 'scores[0].weight', 'scores[1].weight', 'scores[2].weight'])
    assert.match(error.message, /^scheduler config x\.yaml is invalid: /)
    assert.match(error.message, /scores\[0\]\.weight: must be a positive integer/)
  })

  it('refuses unknown plugins, plugins in the wrong section, duplicates and bad arguments', () => {
    const error = configError(() =>
      parseSchedulerConfig(
        {
          filters: [{ name: 'EvenPodSpread', args: { maxSkew: 0, MaxSkew: 2 } }, { name: 'Nope' }],
          scores: [
            { name: 'EvenPodSpread', weight: 1 },
            { name: 'LowestOrdinalPriority', weight: 1 },
            { name: 'LowestOrdinalPriority', weight: 2 }
          ],
          removals: [{ name: 'RemoveWithHighestOrdinalPriority', weight: 1, args: { x: 1 } }],
          balancedness: { zoneSpread: 0, nodeSpread: 0, load: 0 }
        },
        createRegistry()
      )
    )
    const byPath = new Map(error.fields.map(f => [f.path, f.message]))
    assert.match(byPath.get('filters[0].args.maxSkew') ?? '', />= 1/)
    assert.match(byPath.get('filters[0].args.MaxSkew') ?? '', /not a known field/)
    assert.match(byPath.get('filters[1].name') ?? '', /unknown filter plugin "Nope" \(known: EvenPodSpread, /)
    assert.match(byPath.get('scores[0].name') ?? '', /EvenPodSpread is a filter plugin, not a score plugin/)
    assert.match(byPath.get('scores[2].name') ?? '', /listed twice/)
    assert.match(byPath.get('removals[0].args') ?? '', /takes no arguments/)
    assert.match(byPath.get('balancedness') ?? '', /at least one weight/)
  })

  it('refuses a config that is not an object, or misses a section', () => {
    assert.equal(configError(() => parseSchedulerConfig([], createRegistry())).fields[0]?.path, '(root)')
    const missing = configError(() => parseSchedulerConfig({ filters: [], scores: [] }, createRegistry()))
    assert.deepEqual(
      missing.fields.map(f => [f.path, f.message]),
      [['removals', 'is required']]
    )
  })

  it('loads YAML files, and says what is wrong with a missing or malformed one', () => {
    const good = join(dir, 'good.yaml')
    writeFileSync(
      good,
      [
        'filters:',
        '  - name: PodFitsResources',
        '  - name: EvenPodSpread',
        '    args: { maxSkew: 2 }',
        'scores:',
        '  - { name: AvailabilityZonePriority, weight: 10 }',
        'removals:',
        '  - { name: RemoveWithHighestOrdinalPriority, weight: 1 }',
        ''
      ].join('\n')
    )
    const config = loadSchedulerConfig(good)
    assert.deepEqual(config.filters[1], { name: 'EvenPodSpread', args: { maxSkew: 2 } })

    assert.match(configError(() => loadSchedulerConfig(join(dir, 'missing.yaml'))).message, /no such file.*ha, compact/)
    const bad = join(dir, 'bad.yaml')
    writeFileSync(bad, 'filters: [\n')
    assert.match(configError(() => loadSchedulerConfig(bad)).message, /is not valid YAML/)
    const wrong = join(dir, 'wrong.yaml')
    writeFileSync(wrong, 'filters: []\nscores: [{ name: Foo, weight: 1 }]\nremovals: []\n')
    assert.match(
      configError(() => loadSchedulerConfig(wrong)).message,
      /wrong\.yaml is invalid: scores\[0\]\.name: unknown/
    )
  })
})

describe('plugin registry', () => {
  it('holds the built-ins under Knative names', () => {
    const registry = createRegistry()
    assert.deepEqual(registry.names('filter'), ['EvenPodSpread', 'NoMaxResourceCount', 'PodFitsResources'])
    assert.deepEqual(registry.names('score'), [
      'AvailabilityNodePriority',
      'AvailabilityZonePriority',
      'LowestOrdinalPriority'
    ])
    assert.deepEqual(registry.names('removal'), [
      'RemoveWithAvailabilityNodePriority',
      'RemoveWithAvailabilityZonePriority',
      'RemoveWithEvenPodSpreadPriority',
      'RemoveWithHighestOrdinalPriority'
    ])
    assert.equal(BUILTIN_PLUGINS.length, 10)
  })

  it('refuses a name registered twice', () => {
    const registry = createRegistry()
    const again = defineScore({ name: 'LowestOrdinalPriority', score: () => 1 })
    assert.throws(() => registry.register(again), { code: ErrorCodes.CONFIG, message: /already registered/ })
  })

  it('takes a plugin of your own, and the scheduler uses it', () => {
    // Prefer the zone named in the args: the example of docs/scheduler.md.
    const PreferZone = defineScore<{ readonly zone: string }>({
      name: 'PreferZone',
      levels: ['zone'],
      args: {
        schema: {
          type: 'object',
          required: ['zone'],
          properties: { zone: { type: 'string' } },
          additionalProperties: false
        },
        defaults: { zone: '' }
      },
      score: (candidate, _context, args) => (candidate.name === args.zone ? 1 : 0)
    })
    const registry = new PluginRegistry()
    for (const plugin of BUILTIN_PLUGINS) registry.register(plugin)
    registry.register(PreferZone)
    const config = parseSchedulerConfig(
      { filters: [], scores: [{ name: 'PreferZone', weight: 1, args: { zone: 'b' } }], removals: [] },
      registry
    )
    const scheduler = new Scheduler({ config, registry })
    scheduler.setDispatchers(
      ['a', 'b', 'c'].map((zone, i) => ({
        id: `dispatcher-${i}`,
        ordinal: i,
        zone,
        node: zone,
        capacity: { consumer: 5, schedule: 5 },
        state: 'ready' as const
      }))
    )
    scheduler.upsertVPod({ key: 'KafkaSource/default/one', slot: 'consumer', vreplicas: 1 })
    scheduler.schedule()
    assert.deepEqual(scheduler.placements('KafkaSource/default/one'), [{ podName: 'dispatcher-1', vreplicas: 1 }])
    assert.throws(() => new Scheduler({ config }), { code: ErrorCodes.CONFIG, message: /PreferZone/ })
  })
})
