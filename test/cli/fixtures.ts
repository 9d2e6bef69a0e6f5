/** Objects shaped as the Shoal API returns them, for CLI tests. */
export const created = '2024-05-01T12:00:00Z'
export const now = Date.parse('2024-05-01T12:05:00Z')

export function kafkaSource(
  name: string,
  overrides: { namespace?: string; labels?: Record<string, string>; ready?: string; reason?: string } = {}
) {
  return {
    apiVersion: 'sources.knative.dev/v1beta1',
    kind: 'KafkaSource',
    metadata: {
      name,
      namespace: overrides.namespace ?? 'default',
      uid: `uid-${name}`,
      generation: 1,
      resourceVersion: '7',
      creationTimestamp: created,
      ...(overrides.labels === undefined ? {} : { labels: overrides.labels })
    },
    spec: {
      bootstrapServers: ['localhost:9092'],
      topics: ['orders'],
      consumers: 2,
      sink: { uri: 'http://sink.example/' }
    },
    status: {
      observedGeneration: 1,
      sinkUri: 'http://sink.example/',
      conditions: [
        {
          type: 'Ready',
          status: overrides.ready ?? 'True',
          ...(overrides.reason === undefined ? {} : { reason: overrides.reason }),
          lastTransitionTime: created
        }
      ]
    }
  }
}

export function pingSource(name: string, namespace = 'default') {
  return {
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: { name, namespace, uid: `uid-${name}`, generation: 1, resourceVersion: '3', creationTimestamp: created },
    spec: {
      schedule: '*/2 * * * *',
      timezone: 'Europe/Paris',
      data: '{"hello":"world"}',
      sink: { uri: 'http://sink.example/' }
    },
    status: {
      observedGeneration: 1,
      sinkUri: 'http://sink.example/',
      conditions: [{ type: 'Ready', status: 'Unknown', reason: 'NotScheduled', lastTransitionTime: created }]
    }
  }
}
