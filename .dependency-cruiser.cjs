// The layer order of src/ (docs/architecture.md, "Layout and layers"), checked by `npm run layers` in CI.
// A folder may import only the folders before it in this list, and only through their index.ts.
// Folders on one line are one layer: they may not import each other either.
const layers = [
  ['util'],
  ['errors'],
  ['log'],
  ['api'],
  ['kafka'],
  ['lag'],
  ['store'],
  ['secrets'],
  ['delivery'],
  ['auth'],
  ['scheduler'],
  ['autoscale'],
  ['plane'],
  ['kafka-source'],
  ['ping-source'],
  ['metrics'],
  ['dispatcher'],
  ['pool'],
  ['leader'],
  ['reconciler'],
  ['server'],
  ['ui', 'kubernetes'],
  ['controller'],
  ['perf'],
  ['cli']
]

const known = layers.flat()
const alternatives = names => names.join('|')

/** One rule per layer: nothing in it imports a folder of its own layer or of a later one. */
const layerRules = layers.map((names, i) => {
  const later = layers.slice(i).flat()
  return {
    name: `layer-${names[0]}`,
    comment: `${names.join(', ')} may import only ${layers.slice(0, i).flat().join(', ') || 'nothing in src'}`,
    severity: 'error',
    from: { path: `^src/(${alternatives(names)})/` },
    to: {
      path: `^src/(${alternatives(later)})/`,
      // Within its own folder a module imports freely.
      pathNot: `^src/$1/`
    }
  }
})

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'folder-in-layers',
      comment: 'every folder of src/ has its place in the layer order (.dependency-cruiser.cjs, docs/architecture.md)',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/[^/]+/', pathNot: `^src/(${alternatives(known)})/` }
    },
    {
      name: 'index-only',
      comment: "code outside a folder imports only that folder's index.ts",
      severity: 'error',
      from: { path: '^src/([^/]+)/' },
      to: { path: '^src/([^/]+)/', pathNot: ['^src/$1/', '^src/[^/]+/index\\.ts$', '^src/kafka/embedded/index\\.ts$'] }
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' }
  }
}
